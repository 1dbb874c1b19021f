/**
 * The SIP user agent (src/sip/user-agent.ts, user-agent-calls.ts, call.ts, dialog.ts) between two
 * UserAgents on an in-memory network (serialized and parsed on the way, lossy when a test says so) on
 * fake time: calls placed and answered, ACK and BYE both ways, retransmissions over lost datagrams,
 * digest challenges verified by digest-server.ts on the far side, wrong passwords, busy, ring timeout
 * and cancel() with CANCEL/487, OPTIONS/405 and ping, close(), and the dialog rules (§12, §18.2.2);
 * after each call nothing left: no transaction, no dialog, no timer.
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
import { isRequest, type SipRequest, type SipResponse } from '../src/sip/message.js';
import { buildResponse } from '../src/sip/response.js';
import type { CallFailure, IncomingCall } from '../src/sip/user-agent.js';
import { A, ANSWER, B, inviteTo, OFFER, TRUNK, trunkRequest, world } from './support/sip-ua-rig.js';

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
    const { agent, run, clean, trunk } = world();
    const a = agent(A);
    const b = agent(B);
    const t = trunk();
    const alive = a.ua.ping(B, 'udp', `sip:${B.host}`);
    run(20);
    expect(await alive).toEqual({ status: 200, rttMs: 10 });
    const challenged = a.ua.ping(TRUNK, 'udp', `sip:${TRUNK.host}`);
    run(5);
    t.send(buildResponse(t.requests('OPTIONS')[0] as SipRequest, 401));
    run(10);
    expect(await challenged).toEqual({ status: 401, rttMs: 10 });
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
