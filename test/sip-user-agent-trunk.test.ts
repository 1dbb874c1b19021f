/**
 * The SIP user agent against a hand-written trunk, every message typed here: CANCEL only after a
 * provisional (§9.1), timer B, a CANCEL never answered with a final, a 2xx racing our CANCEL (ACK then
 * BYE), a challenged BYE, REFER with NOTIFY sipfrag; inbound: 180/200/ACK/BYE, the 200 re-sent at T1
 * doubling to T2 and a BYE when no ACK comes, CANCEL before the answer, re-INVITE (200 or 488), 481,
 * out-of-order CSeq; and late or reliable cases (a 2xx after its transaction, TCP, transport errors).
 */
import { describe, expect, it } from 'vitest';
import { formatChallenge } from '../src/sip/digest-server.js';
import { header, headers } from '../src/sip/headers.js';
import { isRequest, type SipRequest, type SipResponse } from '../src/sip/message.js';
import { buildResponse } from '../src/sip/response.js';
import type { CallFailure, IncomingCall } from '../src/sip/user-agent.js';
import {
  A,
  ANSWER,
  B,
  inviteTo,
  OFFER,
  TRUNK,
  trunkReply,
  trunkRequest,
  world,
} from './support/sip-ua-rig.js';

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
