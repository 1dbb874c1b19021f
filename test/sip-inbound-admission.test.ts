/**
 * The admission rule for inbound SIP calls (voice/sip/inbound.ts), on its own: which number, which
 * trunk, from where, with which credentials — and that every refusal is the same 403 whatever the
 * reason, while the reason is kept for the log.
 */
import { describe, expect, it } from 'vitest';
import { digestAuthorization, parseDigestChallenges } from '../src/sip/digest.js';
import { createNonceIssuer } from '../src/sip/digest-server.js';
import { admitInvite, type InboundDeps, type InboundNumber } from '../src/voice/sip/inbound.js';
import { type TrunkSettings, trunkSettings } from '../src/voice/sip/trunk-settings.js';

const NUMBER: InboundNumber = {
  id: 1,
  organizationId: 7,
  assistantId: 3,
  graphId: null,
  provider: 'sip_trunk',
  phoneNumber: '+14155550100',
};
const URI = 'sip:+14155550100@203.0.113.7';
const TRUNK = trunkSettings({
  sip_domain: 'trunk.example.com',
  inbound_enabled: 'true',
  username: 'sb',
  password: 'secret',
})!;

function deps(
  overrides: { trunk?: TrunkSettings; number?: InboundNumber; resolved?: string[] } = {},
): InboundDeps {
  return {
    numberOf: async (e164) => (e164 === '+14155550100' ? (overrides.number ?? NUMBER) : undefined),
    trunkOf: async () => overrides.trunk ?? TRUNK,
    addressesOf: async (host) =>
      host === 'trunk.example.com' ? (overrides.resolved ?? ['198.51.100.5']) : [],
    nonces: createNonceIssuer({ secret: Buffer.alloc(32, 7) }),
    realm: '203.0.113.7',
  };
}

const from = (host: string) => ({ host, port: 5060 });

/** The Authorization a caller sends back for `challenge`. */
function answer(challenge: string, password: string, uri = URI): string {
  const [parsed] = parseDigestChallenges(challenge);
  return digestAuthorization(
    parsed!,
    { username: 'sb', password },
    { method: 'INVITE', uri },
    { nc: 1, cnonce: 'c0ffee' },
  );
}

describe('an inbound INVITE', () => {
  it('is taken from an address sip_domain resolves to, when no addresses are listed', async () => {
    expect(
      await admitInvite({ dialled: '+14155550100', source: from('198.51.100.5'), requestUri: URI }, deps()),
    ).toMatchObject({
      kind: 'accept',
      by: 'address',
      number: NUMBER,
    });
  });

  it('is taken from a listed address or block (and then sip_domain’s addresses no longer count)', async () => {
    const trunk = { ...TRUNK, inboundAddresses: ['192.0.2.0/24'] };
    const listed = await admitInvite(
      { dialled: '14155550100', source: from('192.0.2.44'), requestUri: URI },
      deps({ trunk }),
    );
    expect(listed).toMatchObject({ kind: 'accept', by: 'address' });
    const resolvedOnly = await admitInvite(
      { dialled: '+14155550100', source: from('198.51.100.5'), requestUri: URI },
      deps({ trunk }),
    );
    expect(resolvedOnly.kind).toBe('challenge');
  });

  it('reads a %-escaped number in the Request-URI', async () => {
    const admitted = await admitInvite(
      { dialled: '%2B14155550100', source: from('198.51.100.5'), requestUri: URI },
      deps(),
    );
    expect(admitted.kind).toBe('accept');
  });

  it('from elsewhere is challenged, then taken with the trunk’s credentials', async () => {
    const d = deps();
    const challenged = await admitInvite(
      { dialled: '+14155550100', source: from('192.0.2.1'), requestUri: URI },
      d,
    );
    expect(challenged.kind).toBe('challenge');
    const header = (challenged as { header: string }).header;
    expect(header).toMatch(/^Digest realm="203\.0\.113\.7", nonce="[^"]+", algorithm=MD5, qop="auth"$/);
    const proven = await admitInvite(
      {
        dialled: '+14155550100',
        source: from('192.0.2.1'),
        requestUri: URI,
        authorization: answer(header, 'secret'),
      },
      d,
    );
    expect(proven).toMatchObject({ kind: 'accept', by: 'credentials' });
  });

  it('is refused with a wrong password, another user, or a forged nonce', async () => {
    const d = deps();
    const challenged = (await admitInvite(
      { dialled: '+14155550100', source: from('192.0.2.1'), requestUri: URI },
      d,
    )) as {
      header: string;
    };
    for (const authorization of [
      answer(challenged.header, 'guess'),
      answer(challenged.header, 'secret').replace('username="sb"', 'username="other"'),
      answer(challenged.header.replace(/nonce="[^"]+"/, 'nonce="forged"'), 'secret'),
    ]) {
      const refused = await admitInvite(
        { dialled: '+14155550100', source: from('192.0.2.1'), requestUri: URI, authorization },
        d,
      );
      expect(refused).toEqual({ kind: 'refuse', status: 403, why: 'bad-credentials' });
    }
  });

  it('is refused alike for an unknown number, a number on a carrier, a trunk without inbound calls, and a stranger to a trunk without credentials', async () => {
    const cases: Array<[Parameters<typeof admitInvite>[0], InboundDeps, string]> = [
      [{ dialled: '+14155550199', source: from('198.51.100.5'), requestUri: URI }, deps(), 'unknown-number'],
      [{ dialled: 'not-a-number', source: from('198.51.100.5'), requestUri: URI }, deps(), 'unknown-number'],
      [
        { dialled: '+14155550100', source: from('198.51.100.5'), requestUri: URI },
        deps({ number: { ...NUMBER, provider: 'carrier_a' } }),
        'unknown-number',
      ],
      [
        { dialled: '+14155550100', source: from('198.51.100.5'), requestUri: URI },
        deps({ trunk: { ...TRUNK, inboundEnabled: false } }),
        'inbound-disabled',
      ],
      [
        { dialled: '+14155550100', source: from('192.0.2.1'), requestUri: URI },
        deps({ trunk: { ...TRUNK, credentials: undefined } as TrunkSettings }),
        'not-from-trunk',
      ],
    ];
    for (const [invite, d, why] of cases) {
      expect(await admitInvite(invite, d), why).toEqual({ kind: 'refuse', status: 403, why });
    }
  });
});
