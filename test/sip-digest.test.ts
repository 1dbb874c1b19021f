/**
 * Digest authentication for SIP (src/sip/digest.ts, digest-server.ts): the published test vectors
 * (RFC 7616 §3.9.1 MD5 and SHA-256, RFC 2617 §3.5, and one checked with sipp), the RFC 2069, -sess,
 * auth-int and SHA-512-256 arithmetic against node:crypto, the choice among several challenges, nc
 * counting, the server's verification and stateless nonces, and parsers that only throw SipParseError.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  answerChallenge,
  authHeaderNames,
  chooseChallenge,
  type DigestChallenge,
  digestAuthorization,
  digestResponse,
  formatNonceCount,
  NonceCounter,
  parseAuthHeader,
  parseDigestChallenges,
} from '../src/sip/digest.js';
import {
  createNonceIssuer,
  formatChallenge,
  parseAuthorization,
  type VerifyOptions,
  verifyAuthorization,
} from '../src/sip/digest-server.js';
import { SipParseError } from '../src/sip/syntax.js';

/** RFC 7616 §3.9.1: two challenges, SHA-256 first (line breaks of the RFC unfolded). */
const RFC7616_CHALLENGES = ['SHA-256', 'MD5'].map(
  (algorithm) =>
    `Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=${algorithm}, ` +
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"',
);
const MUFASA = { username: 'Mufasa', password: 'Circle of Life' };
const RFC7616_REQUEST = { method: 'GET', uri: '/dir/index.html' };
const RFC7616_COUNTERS = { nc: 1, cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ' };

const hex = (algorithm: string, text: string | Buffer) => createHash(algorithm).update(text).digest('hex');

describe('digest test vectors', () => {
  it('reproduces RFC 7616 §3.9.1 with SHA-256 and MD5', () => {
    const [sha256, md5] = RFC7616_CHALLENGES.map((value) => parseDigestChallenges(value)[0]!);
    expect(digestAuthorization(sha256!, MUFASA, RFC7616_REQUEST, RFC7616_COUNTERS)).toBe(
      'Digest username="Mufasa", realm="http-auth@example.org", nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", ' +
        'uri="/dir/index.html", response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1", ' +
        'algorithm=SHA-256, cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, nc=00000001, ' +
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"',
    );
    expect(digestAuthorization(md5!, MUFASA, RFC7616_REQUEST, RFC7616_COUNTERS)).toContain(
      'response="8ca523f5e9506fed4657c9700eebdbec"',
    );
  });

  it('reproduces RFC 2617 §3.5 and the sipp INVITE of sip-research.md §4', () => {
    expect(
      digestResponse({
        algorithm: 'MD5',
        username: 'Mufasa',
        realm: 'testrealm@host.com',
        password: 'Circle Of Life',
        method: 'GET',
        uri: '/dir/index.html',
        nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
        qop: 'auth',
        nc: '00000001',
        cnonce: '0a4f113b',
      }),
    ).toBe('6629fae49393a05397450978507c4ef1');
    const [challenge] = parseDigestChallenges(
      'Digest realm="trunk.test", nonce="19442n1x9f2c", algorithm=MD5, qop="auth"',
    );
    const value = digestAuthorization(
      challenge!,
      { username: 'alice', password: 's3cret' },
      { method: 'INVITE', uri: 'sip:127.0.0.1:5070' },
      { nc: 1, cnonce: '6b8b4567' },
    );
    expect(value).toContain('response="314c26c4749e02e313aa8fc7471c776e"');
    expect(value).toContain('uri="sip:127.0.0.1:5070"');
  });

  it('computes the RFC 2069 form, -sess, auth-int and SHA-512-256 as the RFCs write them', () => {
    const base = {
      username: 'alice',
      realm: 'r',
      password: 'p',
      method: 'INVITE',
      uri: 'sip:bob@example.com',
      nonce: 'n',
    };
    const ha2 = hex('md5', 'INVITE:sip:bob@example.com');
    expect(digestResponse({ ...base, algorithm: 'MD5' })).toBe(
      hex('md5', `${hex('md5', 'alice:r:p')}:n:${ha2}`),
    );

    const sessHa1 = hex('sha256', `${hex('sha256', 'alice:r:p')}:n:c`);
    const sessHa2 = hex('sha256', 'INVITE:sip:bob@example.com');
    expect(
      digestResponse({ ...base, algorithm: 'SHA-256-sess', qop: 'auth', nc: '00000002', cnonce: 'c' }),
    ).toBe(hex('sha256', `${sessHa1}:n:00000002:c:auth:${sessHa2}`));

    const body = Buffer.from('v=0\r\n');
    const intHa2 = hex('sha512-256', `INVITE:sip:bob@example.com:${hex('sha512-256', body)}`);
    expect(
      digestResponse({
        ...base,
        algorithm: 'SHA-512-256',
        qop: 'auth-int',
        nc: '00000001',
        cnonce: 'c',
        body,
      }),
    ).toBe(hex('sha512-256', `${hex('sha512-256', 'alice:r:p')}:n:00000001:c:auth-int:${intHa2}`));
  });

  it('answers an RFC 2069 challenge without qop, nc or cnonce, and an auth-int-only one with auth-int', () => {
    const [plain] = parseDigestChallenges('Digest realm="r", nonce="n"');
    const value = digestAuthorization(
      plain!,
      { username: 'u', password: 'p' },
      { method: 'BYE', uri: 'sip:x' },
      { nc: 1, cnonce: 'c' },
    );
    expect(value).toBe(
      `Digest username="u", realm="r", nonce="n", uri="sip:x", response="${digestResponse({
        algorithm: 'MD5',
        username: 'u',
        realm: 'r',
        password: 'p',
        method: 'BYE',
        uri: 'sip:x',
        nonce: 'n',
      })}", algorithm=MD5`,
    );
    const [integrity] = parseDigestChallenges('Digest realm="r", nonce="n", qop="auth-int"');
    expect(
      digestAuthorization(
        integrity!,
        { username: 'u', password: 'p' },
        { method: 'BYE', uri: 'sip:x' },
        { nc: 3, cnonce: 'c' },
      ),
    ).toContain('qop=auth-int, nc=00000003');
  });
});

describe('choosing and parsing challenges', () => {
  const challenge = (algorithm: string, nonce = algorithm) =>
    `Digest realm="r", nonce="${nonce}", algorithm=${algorithm}, qop="auth"`;

  it('prefers SHA-512-256 over SHA-256 over MD5, then the topmost', () => {
    expect(
      chooseChallenge([challenge('MD5'), challenge('SHA-256'), challenge('SHA-512-256')])?.algorithm,
    ).toBe('SHA-512-256');
    expect(chooseChallenge([challenge('MD5'), challenge('SHA-256')])?.algorithm).toBe('SHA-256');
    expect(chooseChallenge([challenge('MD5', 'first'), challenge('MD5-sess', 'second')])?.nonce).toBe(
      'first',
    );
    expect(chooseChallenge(RFC7616_CHALLENGES)?.algorithm).toBe('SHA-256');
  });

  it('skips what it cannot answer and values that do not parse, case-insensitively', () => {
    expect(
      chooseChallenge([
        'Basic realm="r"',
        challenge('AKAv1-MD5'),
        'Digest realm="r", nonce="n", qop="auth-conf"',
        'Digest realm="broken',
        'digest REALM="r", NONCE="ok", Algorithm=sha-256, QOP="AUTH", stale=TRUE',
      ]),
    ).toEqual({ realm: 'r', nonce: 'ok', algorithm: 'SHA-256', qop: ['auth'], stale: true });
    expect(chooseChallenge(['Basic realm="r"', challenge('AKAv1-MD5')])).toBeUndefined();
    expect(chooseChallenge([])).toBeUndefined();
  });

  it('reads several challenges in one value, escaped quotes and unquoted base64 nonces', () => {
    expect(parseAuthHeader('Basic realm="a", Digest realm="b\\"c", nonce=YWJj==, Negotiate')).toEqual([
      { scheme: 'Basic', params: new Map([['realm', 'a']]) },
      {
        scheme: 'Digest',
        params: new Map([
          ['realm', 'b"c'],
          ['nonce', 'YWJj=='],
        ]),
      },
      { scheme: 'Negotiate', params: new Map() },
    ]);
    for (const value of [
      '',
      'Digest realm="r" nonce="n"',
      'Digest realm=',
      'Digest realm="r',
      'Digest realm="r", nonce="n"x',
    ]) {
      expect(() => parseDigestChallenges(value === '' ? 'Digest' : value), value).toThrow(SipParseError);
    }
    expect(() => parseDigestChallenges('Digest nonce="n"')).toThrow(SipParseError);
  });

  it('counts nonce uses for nc, per nonce and within a bound', () => {
    const counter = new NonceCounter(2);
    expect([counter.next('a'), counter.next('a'), counter.next('b'), counter.next('a')]).toEqual([
      1, 2, 1, 3,
    ]);
    counter.next('c'); // forgets b, the least recently used
    expect([counter.next('b'), counter.next('a')]).toEqual([1, 1]);
    expect([formatNonceCount(1), formatNonceCount(255)]).toEqual(['00000001', '000000ff']);
    expect(authHeaderNames(401)).toEqual({ challenge: 'WWW-Authenticate', answer: 'Authorization' });
    expect(authHeaderNames(407)).toEqual({ challenge: 'Proxy-Authenticate', answer: 'Proxy-Authorization' });
  });
});

describe('verifying credentials (server side)', () => {
  const secret = Buffer.alloc(32, 7);
  let clock = 1_000_000;
  const issuer = createNonceIssuer({ secret, lifetimeMs: 60_000, now: () => clock });
  const users: Record<string, string> = { alice: 's3cret' };
  const options = (overrides: Partial<VerifyOptions> = {}): VerifyOptions => ({
    method: 'INVITE',
    realm: 'switchboard.example',
    password: (username) => users[username],
    checkNonce: (nonce) => issuer.check(nonce),
    ...overrides,
  });
  const answer = (values: string[], password = 's3cret', counter = new NonceCounter()) =>
    answerChallenge(
      values,
      { username: 'alice', password },
      { method: 'INVITE', uri: 'sip:+1555@switchboard.example' },
      counter,
    )!;

  it('accepts what our client answers to our challenge, for every algorithm and qop', () => {
    for (const algorithm of [
      'MD5',
      'MD5-sess',
      'SHA-256',
      'SHA-256-sess',
      'SHA-512-256',
      'SHA-512-256-sess',
    ] as const) {
      for (const qop of ['auth', 'auth-int', null] as const) {
        const value = formatChallenge({
          realm: 'switchboard.example',
          nonce: issuer.issue(),
          algorithm,
          qop,
          opaque: 'o',
        });
        const { value: credentials } = answer([value]);
        expect(
          verifyAuthorization(credentials, options({ uri: 'sip:+1555@switchboard.example' })),
          `${algorithm} ${qop}`,
        ).toEqual({
          ok: true,
          username: 'alice',
        });
      }
    }
  });

  it('counts nc up on each answer to the same nonce and draws a fresh cnonce', () => {
    const counter = new NonceCounter();
    const value = formatChallenge({ realm: 'switchboard.example', nonce: issuer.issue() });
    const first = parseAuthorization(answer([value], 's3cret', counter).value);
    const second = parseAuthorization(answer([value], 's3cret', counter).value);
    expect([first.nc, second.nc]).toEqual(['00000001', '00000002']);
    expect(first.cnonce).not.toBe(second.cnonce);
  });

  it('refuses with a reason: wrong password, unknown user, realm, algorithm, uri, nonce, malformed', () => {
    const challenge = formatChallenge({ realm: 'switchboard.example', nonce: issuer.issue() });
    const good = answer([challenge]).value;
    expect(verifyAuthorization(answer([challenge], 'wrong').value, options())).toEqual({
      ok: false,
      reason: 'response',
    });
    expect(verifyAuthorization(good.replace('username="alice"', 'username="mallory"'), options())).toEqual({
      ok: false,
      reason: 'unknown-user',
    });
    expect(verifyAuthorization(good, options({ realm: 'other' }))).toEqual({ ok: false, reason: 'realm' });
    expect(verifyAuthorization(good.replace('algorithm=MD5', 'algorithm=AKAv1-MD5'), options())).toEqual({
      ok: false,
      reason: 'algorithm',
    });
    for (const inherited of ['constructor', 'toString', '__proto__']) {
      expect(verifyAuthorization(good.replace('algorithm=MD5', `algorithm=${inherited}`), options())).toEqual(
        {
          ok: false,
          reason: 'algorithm',
        },
      );
    }
    expect(verifyAuthorization(good, options({ uri: 'sip:other@switchboard.example' }))).toEqual({
      ok: false,
      reason: 'uri',
    });
    expect(verifyAuthorization(good, options({ method: 'BYE' }))).toEqual({ ok: false, reason: 'response' });
    expect(verifyAuthorization(good, options({ checkNonce: () => 'invalid' }))).toEqual({
      ok: false,
      reason: 'nonce',
    });
    expect(verifyAuthorization(good.replace(/, nc=\w+/, ''), options())).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyAuthorization(good.replace('qop=auth', 'qop=auth-conf'), options())).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyAuthorization(good.replace(/response="\w+"/, 'response="00"'), options())).toEqual({
      ok: false,
      reason: 'response',
    });
    for (const bad of [
      '',
      'Basic YWxhZGRpbg==',
      'Digest username="alice"',
      'Digest realm="x',
      `${good}, Digest realm="r"`,
    ]) {
      expect(verifyAuthorization(bad, options()), bad).toEqual({ ok: false, reason: 'malformed' });
    }
  });

  it('says stale only for right credentials on an expired nonce', () => {
    const challenge = formatChallenge({ realm: 'switchboard.example', nonce: issuer.issue() });
    const good = answer([challenge]).value;
    const wrong = answer([challenge], 'wrong').value;
    clock += 60_001;
    expect(verifyAuthorization(good, options())).toEqual({ ok: false, reason: 'stale' });
    expect(verifyAuthorization(wrong, options())).toEqual({ ok: false, reason: 'response' });
    expect(formatChallenge({ realm: 'r', nonce: 'n', stale: true })).toBe(
      'Digest realm="r", nonce="n", algorithm=MD5, qop="auth", stale=true',
    );
  });

  it('verifies the RFC 7616 example as a server would, response case-insensitively', () => {
    const header = digestAuthorization(
      parseDigestChallenges(RFC7616_CHALLENGES[1]!)[0]!,
      MUFASA,
      RFC7616_REQUEST,
      RFC7616_COUNTERS,
    );
    const check = {
      method: 'GET',
      realm: 'http-auth@example.org',
      password: () => 'Circle of Life',
      checkNonce: () => 'valid' as const,
    };
    expect(
      verifyAuthorization(
        header.replace('8ca523f5e9506fed4657c9700eebdbec', '8CA523F5E9506FED4657C9700EEBDBEC'),
        check,
      ),
    ).toEqual({
      ok: true,
      username: 'Mufasa',
    });
  });

  it('issues unforgeable, expiring nonces without keeping state', () => {
    let now = 5_000_000;
    const nonces = createNonceIssuer({ secret, lifetimeMs: 1000, now: () => now });
    const nonce = nonces.issue();
    expect(nonces.issue()).not.toBe(nonce);
    expect(nonces.check(nonce)).toBe('valid');
    expect(createNonceIssuer({ secret, now: () => now }).check(nonce)).toBe('valid'); // another process, same secret
    expect(createNonceIssuer({ secret: Buffer.alloc(32, 8), now: () => now }).check(nonce)).toBe('invalid');
    const tampered = `${nonce.slice(0, 5)}${nonce[5] === 'A' ? 'B' : 'A'}${nonce.slice(6)}`;
    for (const bad of [tampered, '', 'garbage', `${nonce}A`, nonce.slice(1), `${nonce.slice(0, -1)}=`]) {
      expect(nonces.check(bad), bad).toBe('invalid');
    }
    now += 1001;
    expect(nonces.check(nonce)).toBe('stale');
    now -= 10_000;
    expect(nonces.check(nonce)).toBe('invalid'); // issued in the future
    expect(() => createNonceIssuer({ secret: Buffer.alloc(8) })).toThrow(RangeError);
  });
});

describe('the digest parsers under random input', () => {
  it('only ever throw SipParseError, and choosing and verifying never throw', () => {
    const answered = digestAuthorization(
      parseDigestChallenges(RFC7616_CHALLENGES[1]!)[0]!,
      MUFASA,
      RFC7616_REQUEST,
      RFC7616_COUNTERS,
    );
    const seeds = [...RFC7616_CHALLENGES, formatChallenge({ realm: 'r', nonce: 'n', opaque: 'o' }), answered];
    const mutated = fc
      .tuple(
        fc.constantFrom(...seeds),
        fc.array(
          fc.tuple(
            fc.nat(),
            fc.oneof(
              fc.string({ unit: 'binary-ascii', maxLength: 3 }),
              fc.constantFrom(
                'constructor',
                '__proto__',
                'algorithm=constructor, ',
                ', Digest ',
                'qop=',
                '"',
                '\\',
                '=',
                ',',
              ),
            ),
          ),
          { maxLength: 4 },
        ),
      )
      .map(([seed, edits]) =>
        edits.reduce(
          (text, [at, insert]) =>
            text.slice(0, at % (text.length + 1)) + insert + text.slice((at % (text.length + 1)) + 1),
          seed,
        ),
      );
    const anyText = fc.oneof(mutated, fc.string({ unit: 'binary', maxLength: 80 }));
    fc.assert(
      fc.property(anyText, (text) => {
        try {
          parseDigestChallenges(text);
        } catch (error) {
          expect(error).toBeInstanceOf(SipParseError);
        }
        const chosen: DigestChallenge | undefined = chooseChallenge([text]);
        if (chosen)
          expect(() => digestAuthorization(chosen, MUFASA, RFC7616_REQUEST, RFC7616_COUNTERS)).not.toThrow();
        const verdict = verifyAuthorization(text, {
          method: 'GET',
          realm: 'http-auth@example.org',
          password: () => 'p',
          checkNonce: () => 'valid',
        });
        expect(typeof verdict.ok).toBe('boolean');
      }),
      { numRuns: 3000 },
    );
  });
});
