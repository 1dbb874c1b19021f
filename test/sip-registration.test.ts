/**
 * Registration (src/sip/registration.ts) against a hand-written registrar on fake time: the digest
 * challenge answered and verified by digest-server.ts, the binding refreshed at max(expires/2,
 * expires − 60 s) with the same Call-ID and a higher CSeq, 423 answered with Min-Expires, failures
 * retried with a growing back-off, a wrong password given up after one retry, and `stop()` removing
 * the binding with Expires: 0 — and nothing left behind afterwards.
 */
import { describe, expect, it } from 'vitest';
import { createNonceIssuer, formatChallenge, verifyAuthorization } from '../src/sip/digest-server.js';
import { header } from '../src/sip/headers.js';
import { isRequest, type SipMessage, type SipRequest } from '../src/sip/message.js';
import { refreshDelayMs, retryDelayMs } from '../src/sip/registration.js';
import { buildResponse } from '../src/sip/response.js';
import type { Peer } from '../src/sip/transaction-common.js';
import { UserAgent } from '../src/sip/user-agent.js';
import { FakeTimers } from './support/fake-timers.js';
import { MemoryNetwork } from './support/sip-network.js';

const US: Peer = { host: '203.0.113.10', port: 5060 };
const REGISTRAR: Peer = { host: '198.51.100.30', port: 5060 };

interface RegistrarOptions {
  password?: string;
  /** The status to answer instead of processing (e.g. 403, 503), while it is set. */
  refuse?: number;
  minExpires?: number;
  grant?: (asked: number) => number;
}

function world(registrar: RegistrarOptions = {}) {
  const timers = new FakeTimers();
  const net = new MemoryNetwork(timers);
  const port = net.port(US);
  const ua = new UserAgent({ transport: port, timers, onInvite: () => {} });
  port.handler = (message, source, transport) => ua.receive(message, source, transport);
  const issuer = createNonceIssuer({ secret: Buffer.alloc(32, 3), now: () => timers.now() });
  const verdicts: boolean[] = [];
  const seen: { at: number; request: SipRequest }[] = [];
  const reg = net.port(REGISTRAR, (message: SipMessage) => {
    if (!isRequest(message)) return;
    seen.push({ at: timers.now(), request: message });
    const reply = (status: number, headers: { name: string; value: string }[] = []) =>
      reg.send(buildResponse(message, status, { toTag: 'reg', headers }), US, 'udp');
    if (registrar.refuse !== undefined) return reply(registrar.refuse);
    const credentials = header(message, 'Authorization');
    const challenge = {
      name: 'WWW-Authenticate',
      value: formatChallenge({ realm: 'trunk', nonce: issuer.issue() }),
    };
    if (credentials === undefined) return reply(401, [challenge]);
    const verdict = verifyAuthorization(credentials, {
      method: 'REGISTER',
      realm: 'trunk',
      password: (user) => (user === 'alice' ? (registrar.password ?? 'secret') : undefined),
      checkNonce: (nonce) => issuer.check(nonce),
      uri: message.uri,
    });
    verdicts.push(verdict.ok);
    if (!verdict.ok) return reply(401, [challenge]);
    const asked = Number(header(message, 'Expires'));
    if (registrar.minExpires !== undefined && asked > 0 && asked < registrar.minExpires) {
      return reply(423, [{ name: 'Min-Expires', value: String(registrar.minExpires) }]);
    }
    const granted = asked === 0 ? 0 : (registrar.grant?.(asked) ?? asked);
    reply(200, [{ name: 'Contact', value: `${header(message, 'Contact')};expires=${granted}` }]);
  });
  const run = (ms: number) => timers.runUntil(timers.now() + ms);
  const register = (expiresSeconds = 120) =>
    ua.register({
      registrar: 'sip:trunk.example.com',
      aor: 'sip:alice@trunk.example.com',
      destination: REGISTRAR,
      transport: 'udp',
      credentials: { username: 'alice', password: 'secret' },
      expiresSeconds,
    });
  const clean = () => {
    run(40_000);
    expect({ transactions: ua.transactions, dialogs: ua.dialogs, pending: ua.pending }).toEqual({
      transactions: 0,
      dialogs: 0,
      pending: 0,
    });
    expect(timers.pending).toBe(0);
  };
  return { timers, net, ua, seen, verdicts, run, register, clean, registrar };
}

describe('registration', () => {
  it('answers the challenge, registers, refreshes on time, and unregisters with Expires: 0', async () => {
    const { seen, verdicts, run, register, clean } = world({ grant: () => 120 });
    const registration = register(3600);
    const registered: number[] = [];
    registration.onRegistered = (expires) => registered.push(expires);
    run(100);
    expect(registered).toEqual([120]);
    expect(verdicts).toEqual([true]);
    const [first, second] = seen.map((s) => s.request);
    if (!first || !second) throw new Error('two REGISTERs expected');
    expect(header(first, 'CSeq')).toBe('1 REGISTER');
    expect(header(second, 'CSeq')).toBe('2 REGISTER');
    expect(header(second, 'Call-ID')).toBe(header(first, 'Call-ID'));
    expect(header(first, 'Contact')).toBe(`<sip:alice@${US.host}:${US.port}>`);
    expect(header(first, 'Expires')).toBe('3600');
    // Granted 120 s: refreshed after max(60, 60) s, with the same Call-ID and a higher CSeq.
    run(60_000);
    expect(seen).toHaveLength(4);
    expect(seen[2]?.at).toBe(60_025); // the 200 came at 20 ms: 60 s later, plus 5 ms on the way
    expect(header(seen[2]?.request as SipRequest, 'CSeq')).toBe('3 REGISTER');
    expect(header(seen[2]?.request as SipRequest, 'Call-ID')).toBe(header(first, 'Call-ID'));
    expect(registered).toEqual([120, 120]);
    const stopped = registration.stop();
    run(100);
    await stopped;
    const last = seen.at(-1)?.request as SipRequest;
    expect(header(last, 'Expires')).toBe('0');
    expect(header(last, 'Authorization')).toBeDefined();
    expect(registration.registered).toBe(false);
    clean();
  });

  it('uses the registrar’s Min-Expires after a 423', () => {
    const { seen, run, register, clean, ua } = world({ minExpires: 300 });
    const registration = register(60);
    const registered: number[] = [];
    registration.onRegistered = (expires) => registered.push(expires);
    run(100);
    expect(registered).toEqual([300]);
    expect(header(seen.at(-1)?.request as SipRequest, 'Expires')).toBe('300');
    void ua.close();
    clean();
  });

  it('gives up after one retry when the password is wrong, then retries with back-off', () => {
    const { seen, run, register, clean, ua, verdicts } = world({ password: 'other' });
    const registration = register();
    const failures: number[] = [];
    registration.onFailed = (status) => failures.push(status);
    run(100);
    expect(failures).toEqual([401]);
    expect(seen).toHaveLength(2);
    expect(verdicts).toEqual([false]);
    run(30_000);
    expect(seen).toHaveLength(4);
    expect(seen[2]?.at).toBe(30_025);
    run(60_000);
    expect(seen).toHaveLength(6);
    expect(failures).toEqual([401, 401, 401]);
    void ua.close();
    clean();
  });

  it('reports 403, retries 30 s later, and registers once the registrar accepts', () => {
    const { seen, run, register, clean, ua, registrar } = world();
    registrar.refuse = 403;
    const registration = register();
    const heard: string[] = [];
    registration.onFailed = (status) => heard.push(`failed ${status}`);
    registration.onRegistered = (expires) => heard.push(`registered ${expires}`);
    run(100);
    registrar.refuse = undefined;
    run(30_000);
    expect(heard).toEqual(['failed 403', 'registered 120']);
    expect(seen.map((s) => s.at)).toEqual([5, 30_015, 30_025]);
    void ua.close();
    clean();
  });

  it('reports 408 when the registrar never answers (timer F) and retries after the back-off', () => {
    const { net, seen, run, register, clean, ua } = world();
    net.drop = (sent) => sent.to.host === REGISTRAR.host;
    const registration = register();
    const failures: { at: number; status: number }[] = [];
    registration.onFailed = (status) => failures.push({ at: net.timers.now(), status });
    run(32_100);
    expect(failures).toEqual([{ at: 32_000, status: 408 }]);
    expect(seen).toHaveLength(0);
    net.drop = () => false;
    run(30_000);
    expect(registration.registered).toBe(true);
    void ua.close();
    clean();
  });

  it('chooses its refresh and back-off times as documented', () => {
    expect(refreshDelayMs(3600)).toBe(3_540_000);
    expect(refreshDelayMs(120)).toBe(60_000);
    expect(refreshDelayMs(30)).toBe(15_000);
    expect([1, 2, 3, 10].map(retryDelayMs)).toEqual([30_000, 60_000, 120_000, 600_000]);
  });
});
