/**
 * The SIP user agent (src/sip/user-agent.ts, user-agent-calls.ts, call.ts, dialog.ts) on fake time:
 * two UserAgents joined by an in-memory network (serialized and parsed on the way, lossy when a test
 * says so), and a hand-written trunk whose every message is typed here. Calls placed and answered,
 * ACK and BYE both ways, digest challenges verified by digest-server.ts on the far side, busy, ring
 * timeouts with CANCEL (also before any provisional, §9.1), a 2xx racing our CANCEL, the 2xx re-sent
 * until its ACK and a BYE when none comes, REFER with NOTIFY sipfrag, re-INVITE, 481, OPTIONS and 405,
 * and after each test nothing left: no transaction, no dialog, no timer.
 */
import { describe, expect, it } from 'vitest';
import { parseVia } from '../src/sip/address.js';
import {
  dialogDestination,
  dialogFromAnswer,
  dialogFromInvite,
  inDialogRequest,
  responseDestination,
  uriDestination,
} from '../src/sip/dialog.js';
import { createNonceIssuer, formatChallenge, verifyAuthorization } from '../src/sip/digest-server.js';
import { header, headers } from '../src/sip/headers.js';
import { isRequest, type SipMessage, type SipRequest, type SipResponse } from '../src/sip/message.js';
import { buildResponse } from '../src/sip/response.js';
import type { Peer } from '../src/sip/transaction-common.js';
import { type CallFailure, type IncomingCall, UserAgent } from '../src/sip/user-agent.js';
import { FakeTimers } from './support/fake-timers.js';
import { MemoryNetwork } from './support/sip-network.js';

const A: Peer = { host: '203.0.113.10', port: 5060 };
const B: Peer = { host: '198.51.100.7', port: 5060 };
const TRUNK: Peer = { host: '198.51.100.20', port: 5060 };
const OFFER =
  'v=0\r\no=- 1 1 IN IP4 203.0.113.10\r\ns=-\r\nc=IN IP4 203.0.113.10\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
const ANSWER =
  'v=0\r\no=- 2 1 IN IP4 198.51.100.7\r\ns=-\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\nm=audio 41000 RTP/AVP 0\r\n';

function world() {
  const timers = new FakeTimers();
  const net = new MemoryNetwork(timers);
  const agent = (address: Peer) => {
    const calls: IncomingCall[] = [];
    const holder: { onInvite: (call: IncomingCall) => void } = { onInvite: () => {} };
    const port = net.port(address);
    const ua = new UserAgent({
      transport: port,
      timers,
      onInvite: (call) => {
        calls.push(call);
        holder.onInvite(call);
      },
    });
    port.handler = (message, source, transport) => ua.receive(message, source, transport);
    return { ua, calls, holder };
  };
  /** A trunk whose messages the test writes: it records what it receives. */
  const trunk = () => {
    const received: SipMessage[] = [];
    const port = net.port(TRUNK, (message) => received.push(message));
    const requests = (method: string) =>
      received.filter((m): m is SipRequest => isRequest(m) && m.method === method);
    const responses = (method: string) =>
      received.filter(
        (m): m is SipResponse => !isRequest(m) && header(m, 'CSeq')?.endsWith(` ${method}`) === true,
      );
    return { received, requests, responses, send: (m: SipMessage, to: Peer = A) => port.send(m, to, 'udp') };
  };
  const run = (ms: number) => timers.runUntil(timers.now() + ms);
  const clean = (...uas: UserAgent[]) => {
    run(40_000);
    for (const ua of uas) {
      expect({ transactions: ua.transactions, dialogs: ua.dialogs, pending: ua.pending }).toEqual({
        transactions: 0,
        dialogs: 0,
        pending: 0,
      });
    }
    expect(timers.pending).toBe(0);
  };
  return { timers, net, agent, trunk, run, clean };
}

const inviteTo = (destination: Peer, extra: Partial<Parameters<UserAgent['invite']>[0]> = {}) => ({
  requestUri: `sip:+15557654321@${destination.host}`,
  from: { uri: 'sip:+15551230000@203.0.113.10', displayName: 'Switchboard' },
  to: `sip:+15557654321@${destination.host}`,
  destination,
  transport: 'udp' as const,
  sdp: OFFER,
  ...extra,
});

/** A response from the trunk with its tag and Contact. */
const trunkReply = (request: SipRequest, status: number, body?: string) =>
  buildResponse(request, status, {
    toTag: 'trunk1',
    headers: [
      { name: 'Contact', value: `<sip:gw@${TRUNK.host}:${TRUNK.port}>` },
      ...(body ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
    ],
    ...(body ? { body: Buffer.from(body) } : {}),
  });

/** A request the trunk sends to A out of dialog or in the dialog it shares with A. */
function trunkRequest(
  method: string,
  options: { callId: string; fromTag: string; toTag?: string; cseq: number; branch: string; body?: string },
): SipRequest {
  const toTag = options.toTag ? `;tag=${options.toTag}` : '';
  return {
    method,
    uri: `sip:switchboard@${A.host}:${A.port}`,
    version: 'SIP/2.0',
    headers: [
      { name: 'Via', value: `SIP/2.0/UDP ${TRUNK.host}:${TRUNK.port};branch=z9hG4bK${options.branch}` },
      { name: 'Max-Forwards', value: '70' },
      { name: 'From', value: `<sip:+15557654321@${TRUNK.host}>;tag=${options.fromTag}` },
      { name: 'To', value: `<sip:+15551230000@${A.host}>${toTag}` },
      { name: 'Call-ID', value: options.callId },
      { name: 'CSeq', value: `${options.cseq} ${method}` },
      { name: 'Contact', value: `<sip:gw@${TRUNK.host}:${TRUNK.port}>` },
      ...(options.body ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
    ],
    body: Buffer.from(options.body ?? ''),
  };
}

describe('outbound calls between two user agents', () => {
  it('rings, is answered, ACKed, and hung up by the caller', async () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    const seen: string[] = [];
    b.holder.onInvite = (call) => {
      call.ringing();
      call.onConfirmed = () => seen.push('b confirmed');
      call.onEnded = (end) => seen.push(`b ended ${end.by}`);
    };
    const call = a.ua.invite(inviteTo(B));
    call.onProgress = (status, reason) => seen.push(`progress ${status} ${reason}`);
    call.onAnswered = (sdp) => seen.push(`answered ${sdp === ANSWER}`);
    run(50);
    expect(b.calls).toHaveLength(1);
    const incoming = b.calls[0] as IncomingCall;
    expect(incoming.sdp).toBe(OFFER);
    expect(incoming.from).toBe('sip:+15551230000@203.0.113.10');
    expect(incoming.fromDisplayName).toBe('Switchboard');
    expect(incoming.to).toBe(`sip:+15557654321@${B.host}`);
    incoming.accept(ANSWER);
    run(50);
    expect(seen).toEqual(['progress 180 Ringing', 'answered true', 'b confirmed']);
    const ack = net.requests('ACK')[0]?.message as SipRequest;
    expect(net.requests('ACK')).toHaveLength(1);
    expect(ack.uri).toBe(`sip:switchboard@${B.host}:${B.port}`);
    expect(header(ack, 'CSeq')).toBe('1 ACK');
    expect(call.dialog?.callId).toBe(incoming.dialog?.callId);
    expect(call.dialog?.remoteTag).toBe(incoming.localTag);
    expect(a.ua.dialogs).toBe(1);
    expect(b.ua.dialogs).toBe(1);
    const bye = call.bye();
    run(50);
    expect(await bye).toBe(200);
    expect(seen.at(-1)).toBe('b ended remote');
    expect(net.statuses('INVITE').filter((s) => s === 200)).toHaveLength(1);
    clean(a.ua, b.ua);
  });

  it('is hung up by the callee: BYE from the far end gets 200 and ends the call', async () => {
    const { agent, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    b.holder.onInvite = (call) => call.accept(ANSWER);
    const call = a.ua.invite(inviteTo(B));
    const ended: unknown[] = [];
    call.onEnded = (end) => ended.push(end);
    run(50);
    const byeStatus = (b.calls[0] as IncomingCall).bye();
    run(50);
    expect(await byeStatus).toBe(200);
    expect(ended).toEqual([{ by: 'remote', reason: 'bye' }]);
    clean(a.ua, b.ua);
  });

  it('survives a lossy network: the lost INVITE, 200 and ACK are each sent again', () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    const lost = new Set<string>();
    net.drop = (sent) => {
      const what = isRequest(sent.message) ? sent.message.method : `${sent.message.status}`;
      if (what === '100' || lost.has(what)) return false;
      lost.add(what);
      return true; // the first INVITE, the first 200 and the first ACK are lost
    };
    let confirmed = false;
    b.holder.onInvite = (call) => {
      call.accept(ANSWER);
      call.onConfirmed = () => {
        confirmed = true;
      };
    };
    const call = a.ua.invite(inviteTo(B));
    let answered = 0;
    call.onAnswered = () => answered++;
    run(5_000);
    expect(net.requests('INVITE').map((s) => s.at)).toEqual([0, 500]);
    expect(net.statuses('INVITE').filter((s) => s === 200)).toHaveLength(3);
    expect(net.requests('ACK')).toHaveLength(2);
    expect(answered).toBe(1);
    expect(confirmed).toBe(true);
    void call.bye();
    clean(a.ua, b.ua);
  });

  it('answers a 401 with Authorization (same Call-ID and From tag, CSeq+1, new branch), verified by the far end', () => {
    const { agent, net, run, clean, timers } = world();
    const a = agent(A);
    const b = agent(B);
    const issuer = createNonceIssuer({ secret: Buffer.alloc(32, 7), now: () => timers.now() });
    const verdicts: unknown[] = [];
    b.holder.onInvite = (call) => {
      const credentials = header(call.request, 'Authorization');
      const challenge = [
        { name: 'WWW-Authenticate', value: formatChallenge({ realm: 'trunk', nonce: issuer.issue() }) },
      ];
      if (credentials === undefined) return call.reject(401, challenge);
      const verdict = verifyAuthorization(credentials, {
        method: 'INVITE',
        realm: 'trunk',
        password: (user) => (user === 'alice' ? 'secret' : undefined),
        checkNonce: (nonce) => issuer.check(nonce),
        uri: call.request.uri,
      });
      verdicts.push(verdict);
      if (verdict.ok) call.accept(ANSWER);
      else call.reject(401, challenge);
    };
    const call = a.ua.invite(inviteTo(B, { credentials: { username: 'alice', password: 'secret' } }));
    let answered = false;
    call.onAnswered = () => {
      answered = true;
    };
    run(100);
    expect(verdicts).toEqual([{ ok: true, username: 'alice' }]);
    expect(answered).toBe(true);
    const [first, second] = net.requests('INVITE').map((s) => s.message as SipRequest);
    if (!first || !second) throw new Error('two INVITEs expected');
    expect(header(second, 'Call-ID')).toBe(header(first, 'Call-ID'));
    expect(header(second, 'From')).toBe(header(first, 'From'));
    expect(header(first, 'CSeq')).toBe('1 INVITE');
    expect(header(second, 'CSeq')).toBe('2 INVITE');
    expect(parseVia(headers(second, 'Via')[0] ?? '').params.get('branch')).not.toBe(
      parseVia(headers(first, 'Via')[0] ?? '').params.get('branch'),
    );
    const acks = net.requests('ACK').map((s) => s.message as SipRequest);
    // One ACK for the 401 (the transaction's, CSeq 1) and one for the 200 (the dialog's, with credentials).
    expect(acks.map((ack) => header(ack, 'CSeq'))).toEqual(['1 ACK', '2 ACK']);
    expect(header(acks[1] as SipRequest, 'Authorization')).toBe(header(second, 'Authorization'));
    void call.bye();
    clean(a.ua, b.ua);
  });

  it('answers a 407 with Proxy-Authorization', () => {
    const { agent, run, clean, timers } = world();
    const a = agent(A);
    const b = agent(B);
    const issuer = createNonceIssuer({ secret: Buffer.alloc(32, 9), now: () => timers.now() });
    const verdicts: boolean[] = [];
    b.holder.onInvite = (call) => {
      const credentials = header(call.request, 'Proxy-Authorization');
      if (credentials === undefined) {
        return call.reject(407, [
          {
            name: 'Proxy-Authenticate',
            value: formatChallenge({ realm: 'proxy', nonce: issuer.issue(), algorithm: 'SHA-256' }),
          },
        ]);
      }
      const verdict = verifyAuthorization(credentials, {
        method: 'INVITE',
        realm: 'proxy',
        password: () => 'pw',
        checkNonce: (nonce) => issuer.check(nonce),
      });
      verdicts.push(verdict.ok);
      call.accept(ANSWER);
    };
    const call = a.ua.invite(inviteTo(B, { credentials: { username: 'bob', password: 'pw' } }));
    let answered = false;
    call.onAnswered = () => {
      answered = true;
    };
    run(100);
    expect(verdicts).toEqual([true]);
    expect(answered).toBe(true);
    void call.bye();
    clean(a.ua, b.ua);
  });

  it('fails with 401 after one retry when the password is wrong', () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    let nonce = 0;
    b.holder.onInvite = (call) =>
      call.reject(401, [
        { name: 'WWW-Authenticate', value: formatChallenge({ realm: 'trunk', nonce: `n${nonce++}` }) },
      ]);
    const call = a.ua.invite(inviteTo(B, { credentials: { username: 'alice', password: 'wrong' } }));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(100);
    expect(failures).toEqual([{ status: 401, reason: 'Unauthorized' }]);
    expect(net.requests('INVITE')).toHaveLength(2);
    clean(a.ua, b.ua);
  });

  it('reports 486 as a failed, busy call', () => {
    const { agent, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    b.holder.onInvite = (call) => call.reject(486);
    const call = a.ua.invite(inviteTo(B));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(100);
    expect(failures).toEqual([{ status: 486, reason: 'Busy Here' }]);
    clean(a.ua, b.ua);
  });

  it('CANCELs on the ring timeout: the callee hears onCancelled, the caller fails 487 timedOut', () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    let cancelled = 0;
    b.holder.onInvite = (call) => {
      call.ringing();
      call.onCancelled = () => cancelled++;
    };
    const call = a.ua.invite(inviteTo(B, { ringTimeoutMs: 10_000 }));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(9_999);
    expect(net.requests('CANCEL')).toHaveLength(0);
    run(100);
    expect(net.requests('CANCEL').map((s) => s.at)).toEqual([10_000]);
    expect(cancelled).toBe(1);
    expect(net.statuses('CANCEL')).toEqual([200]);
    expect(failures).toEqual([{ status: 487, reason: 'Request Terminated', timedOut: true }]);
    clean(a.ua, b.ua);
  });

  it('cancel() before the answer: the callee is cancelled, the caller fails 487', () => {
    const { agent, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    const heard: string[] = [];
    b.holder.onInvite = (call) => {
      call.ringing();
      call.onCancelled = () => heard.push('cancelled');
    };
    const call = a.ua.invite(inviteTo(B));
    call.onFailed = (failure) => heard.push(`failed ${failure.status} ${failure.timedOut ?? false}`);
    run(50);
    call.cancel();
    run(50);
    expect(heard).toEqual(['cancelled', 'failed 487 false']);
    clean(a.ua, b.ua);
  });
});

describe('outbound calls to a hand-written trunk', () => {
  it('waits for a provisional before CANCELling on the ring timeout (§9.1)', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK, { ringTimeoutMs: 1_000 }));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(1_400);
    expect(t.requests('CANCEL')).toHaveLength(0);
    const invite = t.requests('INVITE')[0] as SipRequest;
    t.send(trunkReply(invite, 180));
    run(20);
    const cancel = t.requests('CANCEL')[0] as SipRequest;
    expect(cancel).toBeDefined();
    expect(headers(cancel, 'Via')[0]).toBe(headers(invite, 'Via')[0]);
    expect(header(cancel, 'CSeq')).toBe('1 CANCEL');
    t.send(buildResponse(cancel, 200, { toTag: 'trunk1' }));
    t.send(trunkReply(invite, 487));
    run(20);
    expect(failures).toEqual([{ status: 487, reason: 'Request Terminated', timedOut: true }]);
    expect(t.requests('ACK')).toHaveLength(1);
    clean(a.ua);
  });

  it('gives the INVITE up 64·T1 after a CANCEL the trunk never ends with a final (§9.1)', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(10);
    t.send(trunkReply(t.requests('INVITE')[0] as SipRequest, 180));
    run(10);
    call.cancel();
    run(10);
    t.send(buildResponse(t.requests('CANCEL')[0] as SipRequest, 200, { toTag: 'trunk1' }));
    run(31_900);
    expect(failures).toHaveLength(0);
    run(200);
    expect(failures).toEqual([{ status: 408, reason: 'Request Timeout' }]);
    clean(a.ua);
  });

  it('fails 408 timedOut when the trunk never answers at all (timer B)', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    trunk();
    const call = a.ua.invite(inviteTo(TRUNK, { ringTimeoutMs: 5_000 }));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(32_100);
    expect(failures).toEqual([{ status: 408, reason: 'Request Timeout', timedOut: true }]);
    clean(a.ua);
  });

  it('ACKs and then BYEs a 200 that raced our CANCEL', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK));
    const heard: string[] = [];
    call.onFailed = (failure) => heard.push(`failed ${failure.status}`);
    call.onAnswered = () => heard.push('answered');
    call.onProgress = (status, _reason, sdp) => heard.push(`progress ${status} ${sdp === ANSWER}`);
    run(10);
    const invite = t.requests('INVITE')[0] as SipRequest;
    t.send(trunkReply(invite, 183, ANSWER));
    run(10);
    call.cancel();
    t.send(trunkReply(invite, 200, ANSWER));
    run(10);
    const cancel = t.requests('CANCEL')[0] as SipRequest;
    t.send(buildResponse(cancel, 481));
    const bye = t.requests('BYE')[0] as SipRequest;
    expect(t.requests('ACK')).toHaveLength(1);
    expect(bye.uri).toBe(`sip:gw@${TRUNK.host}:${TRUNK.port}`);
    expect(header(bye, 'To')).toContain('tag=trunk1');
    t.send(buildResponse(bye, 200));
    run(10);
    expect(heard).toEqual(['progress 183 true', 'failed 487']);
    clean(a.ua);
  });

  it('answers a 407 to its BYE with Proxy-Authorization and a higher CSeq', async () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK, { credentials: { username: 'alice', password: 'secret' } }));
    run(10);
    t.send(trunkReply(t.requests('INVITE')[0] as SipRequest, 200, ANSWER));
    run(10);
    const bye = call.bye();
    run(10);
    const first = t.requests('BYE')[0] as SipRequest;
    t.send(
      buildResponse(first, 407, {
        headers: [{ name: 'Proxy-Authenticate', value: formatChallenge({ realm: 'edge', nonce: 'abc' }) }],
      }),
    );
    run(10);
    const second = t.requests('BYE')[1] as SipRequest;
    expect(header(second, 'Proxy-Authorization')).toContain('username="alice"');
    expect(header(second, 'CSeq')).toBe('3 BYE');
    t.send(buildResponse(second, 200));
    run(10);
    expect(await bye).toBe(200);
    clean(a.ua);
  });

  it('sends REFER and reports the NOTIFY sipfrag progress, answering each NOTIFY 200', async () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK));
    const progress: number[] = [];
    call.onReferProgress = (status) => progress.push(status);
    run(10);
    const invite = t.requests('INVITE')[0] as SipRequest;
    t.send(trunkReply(invite, 200, ANSWER));
    run(10);
    const referred = call.refer('sip:+15550001111@trunk.example.com');
    run(10);
    const refer = t.requests('REFER')[0] as SipRequest;
    expect(header(refer, 'Refer-To')).toBe('<sip:+15550001111@trunk.example.com>');
    expect(header(refer, 'CSeq')).toBe('2 REFER');
    t.send(buildResponse(refer, 202));
    run(10);
    expect(await referred).toBe(202);
    const callId = header(invite, 'Call-ID') ?? '';
    const fromTag = call.dialog?.localTag ?? '';
    for (const [cseq, frag] of [
      [1, 'SIP/2.0 100 Trying'],
      [2, 'SIP/2.0 200 OK'],
    ] as const) {
      const notify = trunkRequest('NOTIFY', {
        callId,
        fromTag: 'trunk1',
        toTag: fromTag,
        cseq,
        branch: `n${cseq}`,
      });
      notify.headers.push(
        { name: 'Event', value: 'refer' },
        { name: 'Content-Type', value: 'message/sipfrag' },
      );
      notify.body = Buffer.from(`${frag}\r\n`);
      t.send(notify);
      run(10);
    }
    expect(progress).toEqual([100, 200]);
    expect(t.responses('NOTIFY').map((r) => r.status)).toEqual([200, 200]);
    void call.bye();
    run(10);
    t.send(buildResponse(t.requests('BYE')[0] as SipRequest, 200));
    clean(a.ua);
  });
});

describe('inbound calls from a hand-written trunk', () => {
  const invite = (branch = 'inv1') =>
    trunkRequest('INVITE', { callId: 'call-1@trunk', fromTag: 'trunk1', cseq: 10, branch, body: OFFER });

  it('rings, accepts, stops re-sending the 200 at the ACK, and ends on the trunk BYE', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const heard: string[] = [];
    a.holder.onInvite = (call) => {
      call.ringing();
      call.onConfirmed = () => heard.push('confirmed');
      call.onEnded = (end) => heard.push(`ended ${end.by}`);
    };
    t.send(invite());
    run(10);
    const incoming = a.calls[0] as IncomingCall;
    incoming.accept(ANSWER);
    run(10);
    expect(t.responses('INVITE').map((r) => r.status)).toEqual([180, 200]);
    const ok = t.responses('INVITE')[1] as SipResponse;
    expect(ok.body.toString()).toBe(ANSWER);
    expect(header(ok, 'Contact')).toBe(`<sip:switchboard@${A.host}:${A.port}>`);
    const toTag = incoming.localTag;
    t.send(
      trunkRequest('ACK', { callId: 'call-1@trunk', fromTag: 'trunk1', toTag, cseq: 10, branch: 'ack1' }),
    );
    run(5_000);
    expect(t.responses('INVITE')).toHaveLength(2);
    expect(heard).toEqual(['confirmed']);
    t.send(
      trunkRequest('BYE', { callId: 'call-1@trunk', fromTag: 'trunk1', toTag, cseq: 11, branch: 'bye1' }),
    );
    run(10);
    expect(t.responses('BYE').map((r) => r.status)).toEqual([200]);
    expect(heard).toEqual(['confirmed', 'ended remote']);
    clean(a.ua);
  });

  it('re-sends the 200 at T1 doubling to T2 and, with no ACK in 64·T1, sends BYE', () => {
    const { agent, net, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const ended: unknown[] = [];
    a.holder.onInvite = (call) => {
      call.onEnded = (end) => ended.push(end);
      call.accept(ANSWER);
    };
    t.send(invite());
    run(40_000);
    const okTimes = net.log
      .filter((s) => !isRequest(s.message) && s.message.status === 200)
      .map((s) => s.at - 5);
    expect(okTimes).toEqual([0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
    expect(ended).toEqual([{ by: 'local', reason: 'no-ack' }]);
    const bye = t.requests('BYE')[0] as SipRequest;
    expect(net.requests('BYE')[0]?.at).toBe(32_005);
    expect(bye.uri).toBe(`sip:gw@${TRUNK.host}:${TRUNK.port}`);
    t.send(buildResponse(bye, 200));
    clean(a.ua);
  });

  it('answers CANCEL before the answer with 200, the INVITE with 487, and tells onCancelled', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    let cancelled = 0;
    a.holder.onInvite = (call) => {
      call.ringing();
      call.onCancelled = () => cancelled++;
    };
    const request = invite('inv2');
    t.send(request);
    run(10);
    const cancel: SipRequest = {
      ...request,
      method: 'CANCEL',
      headers: request.headers
        .filter((h) => h.name !== 'Content-Type' && h.name !== 'Contact')
        .map((h) => (h.name === 'CSeq' ? { name: 'CSeq', value: '10 CANCEL' } : h)),
      body: Buffer.alloc(0),
    };
    t.send(cancel);
    run(10);
    expect(cancelled).toBe(1);
    expect(t.responses('CANCEL').map((r) => r.status)).toEqual([200]);
    expect(t.responses('INVITE').map((r) => r.status)).toEqual([180, 487]);
    const final = t.responses('INVITE')[1] as SipResponse;
    t.send(
      trunkRequest('ACK', {
        callId: 'call-1@trunk',
        fromTag: 'trunk1',
        toTag: (a.calls[0] as IncomingCall).localTag,
        cseq: 10,
        branch: 'inv2',
      }),
    );
    expect(header(final, 'To')).toContain('tag=');
    clean(a.ua);
  });

  it('answers a re-INVITE with onReoffer’s SDP, or 488 when it returns nothing', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const offers: string[] = [];
    let answer: string | undefined = `${ANSWER}a=sendonly\r\n`;
    a.holder.onInvite = (call) => {
      call.onReoffer = (sdp) => {
        offers.push(sdp);
        return answer;
      };
      call.accept(ANSWER);
    };
    t.send(invite());
    run(10);
    const toTag = (a.calls[0] as IncomingCall).localTag;
    const base = { callId: 'call-1@trunk', fromTag: 'trunk1', toTag };
    t.send(trunkRequest('ACK', { ...base, cseq: 10, branch: 'ack1' }));
    t.send(trunkRequest('INVITE', { ...base, cseq: 11, branch: 're1', body: `${OFFER}a=sendonly\r\n` }));
    run(10);
    const ok = t.responses('INVITE').at(-1) as SipResponse;
    expect(ok.status).toBe(200);
    expect(ok.body.toString()).toBe(`${ANSWER}a=sendonly\r\n`);
    t.send(trunkRequest('ACK', { ...base, cseq: 11, branch: 'ack2' }));
    answer = undefined;
    t.send(trunkRequest('INVITE', { ...base, cseq: 12, branch: 're2', body: OFFER }));
    run(10);
    expect(t.responses('INVITE').map((r) => r.status)).toEqual([200, 200, 488]);
    expect(offers).toHaveLength(2);
    // Out of order: a CSeq below the last one is refused with 500 (§12.2.2).
    t.send(trunkRequest('INFO', { ...base, cseq: 5, branch: 'info1' }));
    t.send(trunkRequest('OPTIONS', { ...base, cseq: 13, branch: 'opt1' }));
    run(10);
    expect(t.responses('INFO').map((r) => r.status)).toEqual([500]);
    expect(t.responses('OPTIONS').map((r) => r.status)).toEqual([200]);
    t.send(trunkRequest('BYE', { ...base, cseq: 14, branch: 'bye1' }));
    clean(a.ua);
  });

  it('answers 481 to requests for a dialog it does not know', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    t.send(trunkRequest('BYE', { callId: 'nope@trunk', fromTag: 'x', toTag: 'y', cseq: 1, branch: 'b1' }));
    t.send(
      trunkRequest('INVITE', {
        callId: 'nope@trunk',
        fromTag: 'x',
        toTag: 'y',
        cseq: 2,
        branch: 'b2',
        body: OFFER,
      }),
    );
    t.send(trunkRequest('BYE', { callId: 'nope@trunk', fromTag: 'x', cseq: 3, branch: 'b3' }));
    run(10);
    expect(t.responses('BYE').map((r) => r.status)).toEqual([481, 481]);
    expect(t.responses('INVITE').map((r) => r.status)).toEqual([481]);
    expect(a.calls).toHaveLength(0);
    clean(a.ua);
  });
});

describe('out of dialog', () => {
  it('answers OPTIONS 200 with Allow and Accept, REGISTER and unknown methods 405 with Allow', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    t.send(trunkRequest('OPTIONS', { callId: 'o@trunk', fromTag: 'x', cseq: 1, branch: 'o1' }));
    t.send(trunkRequest('REGISTER', { callId: 'r@trunk', fromTag: 'x', cseq: 1, branch: 'r1' }));
    t.send(trunkRequest('FROB', { callId: 'f@trunk', fromTag: 'x', cseq: 1, branch: 'f1' }));
    run(10);
    const options = t.responses('OPTIONS')[0] as SipResponse;
    expect(options.status).toBe(200);
    expect(header(options, 'Allow')).toContain('INVITE');
    expect(header(options, 'Accept')).toBe('application/sdp');
    expect(t.responses('REGISTER').map((r) => r.status)).toEqual([405]);
    const frob = t.responses('FROB')[0] as SipResponse;
    expect(frob.status).toBe(405);
    expect(header(frob, 'Allow')).toContain('BYE');
    clean(a.ua);
  });

  it('ping(): OPTIONS keep-alive with its round trip; 401 counts as alive; 408 when nobody answers', async () => {
    const { agent, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    const alive = a.ua.ping(B, 'udp', `sip:${B.host}`);
    run(20);
    expect(await alive).toEqual({ status: 200, rttMs: 10 });
    const nobody = a.ua.ping({ host: '192.0.2.99', port: 5060 }, 'udp', 'sip:192.0.2.99');
    run(33_000);
    expect((await nobody).status).toBe(408);
    clean(a.ua, b.ua);
  });

  it('close() BYEs confirmed calls and CANCELs ringing ones', async () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    b.holder.onInvite = (call) => {
      if (b.calls.length === 1) call.accept(ANSWER);
      else call.ringing();
    };
    a.ua.invite(inviteTo(B));
    run(20);
    const ringing = a.ua.invite(inviteTo(B));
    const failures: number[] = [];
    ringing.onFailed = (failure) => failures.push(failure.status);
    run(20);
    const closed = a.ua.close();
    run(50);
    await closed;
    expect(net.requests('BYE')).toHaveLength(1);
    expect(net.requests('CANCEL')).toHaveLength(1);
    expect(failures).toEqual([487]);
    clean(a.ua, b.ua);
  });
});

describe('dialog rules', () => {
  it('sends responses per §18.2.2 and RFC 3581', () => {
    const source = { host: '192.0.2.1', port: 40000 };
    const via = (text: string) => parseVia(text);
    expect(responseDestination(via('SIP/2.0/UDP pbx.example.com;branch=z9hG4bKx'), source)).toEqual({
      host: 'pbx.example.com',
      port: 5060,
    });
    expect(
      responseDestination(via('SIP/2.0/UDP 10.0.0.2:5070;received=192.0.2.1;branch=z9hG4bKx'), source),
    ).toEqual({
      host: '192.0.2.1',
      port: 5070,
    });
    expect(responseDestination(via('SIP/2.0/UDP 10.0.0.2:5070;rport;branch=z9hG4bKx'), source)).toEqual(
      source,
    );
    expect(responseDestination(via('SIP/2.0/UDP 10.0.0.2;rport=40001;received=192.0.2.9'), source)).toEqual({
      host: '192.0.2.9',
      port: 40001,
    });
    expect(responseDestination(via('SIP/2.0/TCP 10.0.0.2:5070;branch=z9hG4bKx'), source, true)).toEqual(
      source,
    );
    expect(uriDestination('sip:gw@[2001:db8::1]', 'tls')).toEqual({ host: '2001:db8::1', port: 5061 });
  });

  it('takes the caller’s route set from the 2xx Record-Route reversed, the target from its Contact', () => {
    const invite = trunkRequest('INVITE', {
      callId: 'c@t',
      fromTag: 'ours',
      cseq: 4,
      branch: 'r',
      body: OFFER,
    });
    const ok = buildResponse(invite, 200, {
      toTag: 'theirs',
      headers: [
        { name: 'Record-Route', value: '<sip:p2.example.com;lr>' },
        { name: 'Record-Route', value: '<sip:p1.example.com;lr>' },
        { name: 'Contact', value: '<sip:gw@192.0.2.77:5080>' },
      ],
    });
    const dialog = dialogFromAnswer(invite, ok, 'udp');
    expect(dialog).toMatchObject({
      localTag: 'ours',
      remoteTag: 'theirs',
      localSeq: 4,
      routeSet: ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>'],
      remoteTarget: 'sip:gw@192.0.2.77:5080',
    });
    expect(dialogDestination(dialog)).toEqual({ host: 'p1.example.com', port: 5060 });
  });

  it('builds in-dialog requests from the route set and remote target, CSeq counting up', () => {
    const request = trunkRequest('INVITE', {
      callId: 'c@t',
      fromTag: 'ft',
      cseq: 7,
      branch: 'r',
      body: OFFER,
    });
    request.headers.push({ name: 'Record-Route', value: '<sip:p1.example.com;lr>, <sip:p2.example.com;lr>' });
    const dialog = dialogFromInvite(request, 'ours', 'udp');
    expect(dialog.routeSet).toEqual(['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
    const first = inDialogRequest(dialog, 'BYE', { via: 'SIP/2.0/UDP 203.0.113.10;branch=z9hG4bKa' });
    const second = inDialogRequest(dialog, 'INFO', { via: 'SIP/2.0/UDP 203.0.113.10;branch=z9hG4bKb' });
    expect(first.uri).toBe(`sip:gw@${TRUNK.host}:${TRUNK.port}`);
    expect(headers(first, 'Route')).toEqual(['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
    expect(header(first, 'From')).toBe(`<sip:+15551230000@${A.host}>;tag=ours`);
    expect(header(first, 'To')).toBe(`<sip:+15557654321@${TRUNK.host}>;tag=ft`);
    expect(Number(header(second, 'CSeq')?.split(' ')[0])).toBe(
      Number(header(first, 'CSeq')?.split(' ')[0]) + 1,
    );
  });
});

describe('late and reliable', () => {
  it('reports a transport error as 503, after the caller could listen', () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    net.refuse = (sent) => sent.to.host === '192.0.2.50';
    const call = a.ua.invite(inviteTo({ host: '192.0.2.50', port: 5060 }, { transport: 'tcp' }));
    const failures: CallFailure[] = [];
    call.onFailed = (failure) => failures.push(failure);
    run(1);
    expect(failures).toEqual([{ status: 503, reason: 'Service Unavailable' }]);
    clean(a.ua);
  });

  it('ACKs a 200 retransmitted after the INVITE transaction ended (the dialog answers it)', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    const call = a.ua.invite(inviteTo(TRUNK));
    run(10);
    const invite = t.requests('INVITE')[0] as SipRequest;
    const ok = trunkReply(invite, 200, ANSWER);
    t.send(ok);
    run(33_000); // timer M (64·T1) has ended the INVITE transaction
    expect(a.ua.transactions).toBe(0);
    t.send(ok);
    run(10);
    expect(t.requests('ACK')).toHaveLength(2);
    void call.bye();
    run(10);
    t.send(buildResponse(t.requests('BYE')[0] as SipRequest, 200));
    clean(a.ua);
  });

  it('answers a CANCEL for an INVITE already answered with 200 and changes nothing', () => {
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const t = trunk();
    a.holder.onInvite = (call) => call.accept(ANSWER);
    const request = trunkRequest('INVITE', {
      callId: 'c2@trunk',
      fromTag: 'tf',
      cseq: 1,
      branch: 'i9',
      body: OFFER,
    });
    t.send(request);
    run(10);
    t.send({
      ...request,
      method: 'CANCEL',
      headers: request.headers.map((h) => (h.name === 'CSeq' ? { name: 'CSeq', value: '1 CANCEL' } : h)),
      body: Buffer.alloc(0),
    });
    run(10);
    expect(t.responses('CANCEL').map((r) => r.status)).toEqual([200]);
    const toTag = (a.calls[0] as IncomingCall).localTag;
    t.send(trunkRequest('ACK', { callId: 'c2@trunk', fromTag: 'tf', toTag, cseq: 1, branch: 'a9' }));
    run(10);
    expect(a.ua.dialogs).toBe(1);
    t.send(trunkRequest('BYE', { callId: 'c2@trunk', fromTag: 'tf', toTag, cseq: 2, branch: 'b9' }));
    clean(a.ua);
  });

  it('over TCP sends nothing twice: no INVITE or 200 retransmissions', () => {
    const { agent, net, run, clean } = world();
    const a = agent(A);
    const b = agent(B);
    net.drop = (sent) => isRequest(sent.message) && sent.message.method === 'ACK';
    b.holder.onInvite = (call) => call.accept(ANSWER);
    const call = a.ua.invite(inviteTo(B, { transport: 'tcp' }));
    const ended: unknown[] = [];
    call.onEnded = (end) => ended.push(end);
    run(40_000);
    expect(net.requests('INVITE')).toHaveLength(1);
    expect(net.statuses('INVITE')).toEqual([200]);
    expect(net.requests('INVITE')[0]?.message.headers.find((h) => h.name === 'Contact')?.value).toContain(
      ';transport=tcp',
    );
    // The ACK was lost, so the callee gave up after 64·T1 and hung up.
    expect(ended).toEqual([{ by: 'remote', reason: 'bye' }]);
    expect(net.requests('BYE').every((s) => s.transport === 'tcp')).toBe(true);
    clean(a.ua, b.ua);
  });
});
