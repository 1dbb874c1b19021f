/**
 * The SIP transaction layer (src/sip/transactions.ts) on fake timers: retransmission schedules exactly
 * as RFC 3261 §17 gives them (none on TCP), timeouts, the ACK for a non-2xx built and re-sent, 2xx and
 * their retransmissions passed up (RFC 6026 Accepted), 100 Trying only when the TU is slow, request
 * retransmissions answered from the transaction, ACK and CANCEL matching, and no transaction left
 * behind once its last timer fired.
 */
import { describe, expect, it } from 'vitest';
import { header } from '../src/sip/headers.js';
import { isRequest, type SipMessage, type SipRequest, type SipResponse } from '../src/sip/message.js';
import { buildResponse } from '../src/sip/response.js';
import {
  newBranch,
  type Peer,
  type ServerTransaction,
  TransactionLayer,
  type TransactionUser,
} from '../src/sip/transactions.js';
import { FakeTimers } from './support/fake-timers.js';

const TRUNK: Peer = { host: '198.51.100.7', port: 5060 };

function request(method: string, branch: string, transport = 'UDP', cseqMethod = method): SipRequest {
  return {
    method,
    uri: 'sip:+15557654321@trunk.example.com',
    version: 'SIP/2.0',
    headers: [
      { name: 'Via', value: `SIP/2.0/${transport} 203.0.113.10:5060;branch=${branch}` },
      { name: 'Route', value: '<sip:198.51.100.1;lr>' },
      { name: 'Max-Forwards', value: '70' },
      { name: 'From', value: '<sip:+15551230000@203.0.113.10>;tag=1928301774' },
      { name: 'To', value: '<sip:+15557654321@trunk.example.com>' },
      { name: 'Call-ID', value: 'a84b4c76e66710@203.0.113.10' },
      { name: 'CSeq', value: `314159 ${cseqMethod}` },
    ],
    body: Buffer.alloc(0),
  };
}

const reply = (req: SipRequest, status: number) => buildResponse(req, status, { toTag: 'a6c85cf' });

function rig() {
  const timers = new FakeTimers();
  const sent: { at: number; message: SipMessage; to: Peer; transport: string }[] = [];
  const heard: { kind: string; detail?: unknown }[] = [];
  const servers: ServerTransaction[] = [];
  let failSends = false;
  const user: TransactionUser = {
    request: (tx) => {
      servers.push(tx);
      heard.push({ kind: 'request', detail: tx.request.method });
    },
    ack: (req) => heard.push({ kind: 'ack', detail: req.method }),
    strayResponse: (res) => heard.push({ kind: 'stray', detail: res.status }),
    refused: (_req, _source, reason) => heard.push({ kind: 'refused', detail: reason }),
    serverTimeout: () => heard.push({ kind: 'server-timeout' }),
  };
  const layer = new TransactionLayer(
    {
      send: (message, to, transport) => {
        if (failSends) throw new Error('ECONNRESET');
        sent.push({ at: timers.now(), message, to, transport });
      },
      timers,
      reliable: (transport) => transport !== 'UDP',
    },
    user,
  );
  const events = {
    provisional: (res: SipResponse) => heard.push({ kind: 'provisional', detail: res.status }),
    final: (res: SipResponse) => heard.push({ kind: 'final', detail: res.status }),
    timeout: () => heard.push({ kind: 'timeout' }),
    transportError: (error: unknown) => heard.push({ kind: 'transport-error', detail: String(error) }),
  };
  const times = (method: string) =>
    sent.filter((s) => isRequest(s.message) && s.message.method === method).map((s) => s.at);
  const statuses = () =>
    sent.filter((s) => !isRequest(s.message)).map((s) => (s.message as SipResponse).status);
  return {
    timers,
    sent,
    heard,
    servers,
    layer,
    events,
    times,
    statuses,
    failNext: () => {
      failSends = true;
    },
  };
}

describe('INVITE client transactions', () => {
  it('retransmit over UDP at 0, 500, 1500, 3500… and time out with timer B at 32 s', () => {
    const r = rig();
    r.layer.sendRequest(request('INVITE', newBranch()), TRUNK, 'UDP', r.events);
    r.timers.runUntil(31_999);
    expect(r.times('INVITE')).toEqual([0, 500, 1500, 3500, 7500, 15_500, 31_500]);
    expect(r.heard).toEqual([]);
    r.timers.runUntil(32_000);
    expect(r.heard).toEqual([{ kind: 'timeout' }]);
    expect(r.layer.size).toBe(0);
    expect(r.timers.pending).toBe(0);
  });

  it('send once over TCP and still time out at 64·T1', () => {
    const r = rig();
    r.layer.sendRequest(request('INVITE', newBranch(), 'TCP'), TRUNK, 'TCP', r.events);
    r.timers.runUntil(40_000);
    expect(r.times('INVITE')).toEqual([0]);
    expect(r.heard).toEqual([{ kind: 'timeout' }]);
    expect(r.layer.size).toBe(0);
  });

  it('stop retransmitting on a 1xx, then ACK a 486 with the same branch and re-ACK its retransmissions until D', () => {
    const r = rig();
    const invite = request('INVITE', newBranch());
    r.layer.sendRequest(invite, TRUNK, 'UDP', r.events);
    r.timers.runUntil(600);
    r.layer.receive(reply(invite, 180), TRUNK);
    r.timers.runUntil(60_000);
    expect(r.times('INVITE')).toEqual([0, 500]);
    expect(r.heard).toEqual([{ kind: 'provisional', detail: 180 }]); // no timer B once Proceeding

    r.layer.receive(reply(invite, 486), TRUNK);
    r.layer.receive(reply(invite, 486), TRUNK);
    expect(r.heard).toEqual([
      { kind: 'provisional', detail: 180 },
      { kind: 'final', detail: 486 },
    ]);
    const acks = r.sent.filter((s) => isRequest(s.message) && s.message.method === 'ACK');
    expect(acks).toHaveLength(2);
    const ack = acks[0]?.message as SipRequest;
    expect(ack.uri).toBe(invite.uri);
    expect(header(ack, 'Via')).toBe(header(invite, 'Via'));
    expect(header(ack, 'CSeq')).toBe('314159 ACK');
    expect(header(ack, 'To')).toBe('<sip:+15557654321@trunk.example.com>;tag=a6c85cf');
    expect(header(ack, 'Route')).toBe('<sip:198.51.100.1;lr>');
    expect(acks[0]?.to).toEqual(TRUNK);

    expect(r.layer.size).toBe(1);
    r.timers.runUntil(60_000 + 31_999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(60_000 + 32_000);
    expect(r.layer.size).toBe(0);
    r.layer.receive(reply(invite, 486), TRUNK);
    expect(r.heard.at(-1)).toEqual({ kind: 'stray', detail: 486 });
  });

  it('leave Completed at once over TCP (timer D = 0)', () => {
    const r = rig();
    const invite = request('INVITE', newBranch(), 'TCP');
    r.layer.sendRequest(invite, TRUNK, 'TCP', r.events);
    r.layer.receive(reply(invite, 503), TRUNK);
    expect(r.times('ACK')).toEqual([0]);
    expect(r.layer.size).toBe(0);
  });

  it('pass a 2xx up, and its retransmissions in Accepted, without an ACK, until timer M', () => {
    const r = rig();
    const invite = request('INVITE', newBranch());
    r.layer.sendRequest(invite, TRUNK, 'UDP', r.events);
    r.timers.runUntil(100);
    r.layer.receive(reply(invite, 200), TRUNK);
    r.timers.runUntil(5000);
    r.layer.receive(reply(invite, 200), TRUNK);
    r.layer.receive(reply(invite, 180), TRUNK); // absorbed in Accepted
    expect(r.heard).toEqual([
      { kind: 'final', detail: 200 },
      { kind: 'final', detail: 200 },
    ]);
    expect(r.times('INVITE')).toEqual([0]);
    expect(r.times('ACK')).toEqual([]);
    r.timers.runUntil(100 + 31_999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(100 + 32_000);
    expect(r.layer.size).toBe(0);
  });

  it('report a send that throws as a transport error and end', () => {
    const r = rig();
    r.failNext();
    r.layer.sendRequest(request('INVITE', newBranch()), TRUNK, 'UDP', r.events);
    expect(r.heard).toEqual([{ kind: 'transport-error', detail: 'Error: ECONNRESET' }]);
    expect(r.layer.size).toBe(0);
    expect(r.timers.pending).toBe(0);
  });
});

describe('non-INVITE client transactions', () => {
  it('retransmit with timer E doubling to T2 and time out with F at 32 s', () => {
    const r = rig();
    r.layer.sendRequest(request('OPTIONS', newBranch()), TRUNK, 'UDP', r.events);
    r.timers.runUntil(32_000);
    expect(r.times('OPTIONS')).toEqual([
      0, 500, 1500, 3500, 7500, 11_500, 15_500, 19_500, 23_500, 27_500, 31_500,
    ]);
    expect(r.heard).toEqual([{ kind: 'timeout' }]);
    expect(r.layer.size).toBe(0);
  });

  it('continue at T2 once Proceeding, absorb retransmitted finals, and end after K = T4', () => {
    const r = rig();
    const bye = request('BYE', newBranch());
    r.layer.sendRequest(bye, TRUNK, 'UDP', r.events);
    r.timers.runUntil(600);
    r.layer.receive(reply(bye, 100), TRUNK);
    r.timers.runUntil(9000);
    // E fired at 500 (next due 1500 at 1000 ms); after the 1xx every later one is T2 apart.
    expect(r.times('BYE')).toEqual([0, 500, 1500, 5500]);
    r.layer.receive(reply(bye, 200), TRUNK);
    r.layer.receive(reply(bye, 200), TRUNK);
    expect(r.heard).toEqual([
      { kind: 'provisional', detail: 100 },
      { kind: 'final', detail: 200 },
    ]);
    r.timers.runUntil(9000 + 4999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(9000 + 5000);
    expect(r.layer.size).toBe(0);
    expect(r.timers.pending).toBe(0);
  });

  it('send once over TCP and end at once on the final (K = 0)', () => {
    const r = rig();
    const register = request('REGISTER', newBranch(), 'TCP');
    r.layer.sendRequest(register, TRUNK, 'TCP', r.events);
    r.timers.runUntil(10_000);
    r.layer.receive(reply(register, 200), TRUNK);
    expect(r.times('REGISTER')).toEqual([0]);
    expect(r.layer.size).toBe(0);
  });

  it('match responses by branch and CSeq method: a CANCEL and its INVITE are separate', () => {
    const r = rig();
    const branch = newBranch();
    const invite = request('INVITE', branch);
    const cancel = request('CANCEL', branch);
    r.layer.sendRequest(invite, TRUNK, 'UDP', r.events);
    r.layer.sendRequest(cancel, TRUNK, 'UDP', r.events);
    r.layer.receive(reply(cancel, 200), TRUNK);
    r.layer.receive(reply(invite, 487), TRUNK);
    r.layer.receive(reply(request('INVITE', newBranch()), 200), TRUNK);
    expect(r.heard).toEqual([
      { kind: 'final', detail: 200 },
      { kind: 'final', detail: 487 },
      { kind: 'stray', detail: 200 },
    ]);
    expect(r.times('ACK')).toEqual([0]);
  });
});

describe('INVITE server transactions', () => {
  it('send 100 Trying after 200 ms when the TU has not answered', () => {
    const r = rig();
    r.layer.receive(request('INVITE', newBranch()), TRUNK);
    r.timers.runUntil(199);
    expect(r.statuses()).toEqual([]);
    r.timers.runUntil(200);
    expect(r.statuses()).toEqual([100]);
    expect(r.sent[0]?.to).toEqual(TRUNK);
  });

  it('send no 100 Trying when the TU answered within 200 ms', () => {
    const r = rig();
    r.layer.receive(request('INVITE', newBranch()), TRUNK);
    r.timers.runUntil(150);
    const tx = r.servers[0] as ServerTransaction;
    tx.respond(reply(tx.request, 180));
    r.timers.runUntil(1000);
    expect(r.statuses()).toEqual([180]);
  });

  it('answer retransmitted INVITEs with the last response, never reaching the TU', () => {
    const r = rig();
    const invite = request('INVITE', newBranch());
    r.layer.receive(invite, TRUNK);
    r.layer.receive(invite, TRUNK); // before any response: nothing to re-send
    r.timers.runUntil(300);
    r.layer.receive(invite, TRUNK);
    const tx = r.servers[0] as ServerTransaction;
    tx.respond(reply(invite, 183));
    r.layer.receive(invite, TRUNK);
    expect(r.statuses()).toEqual([100, 100, 183, 183]);
    expect(r.heard).toEqual([{ kind: 'request', detail: 'INVITE' }]);
  });

  it('retransmit a non-2xx final with timer G to T2, absorb the ACK, end after I', () => {
    const r = rig();
    const invite = request('INVITE', newBranch());
    r.layer.receive(invite, TRUNK);
    const tx = r.servers[0] as ServerTransaction;
    tx.respond(reply(invite, 486));
    r.timers.runUntil(16_000);
    const finals = r.sent.filter((s) => !isRequest(s.message)).map((s) => s.at);
    expect(finals).toEqual([0, 500, 1500, 3500, 7500, 11_500, 15_500]);
    r.layer.receive(invite, TRUNK);
    expect(r.statuses()).toHaveLength(8);
    const ack = request('ACK', (header(invite, 'Via') ?? '').split('branch=')[1] ?? '');
    r.layer.receive(ack, TRUNK);
    expect(tx.state).toBe('confirmed');
    r.layer.receive(ack, TRUNK); // a retransmitted ACK is absorbed in Confirmed too
    r.timers.runUntil(16_000 + 4999);
    expect(r.statuses()).toHaveLength(8); // G stopped by the ACK
    expect(r.heard).toEqual([{ kind: 'request', detail: 'INVITE' }]); // the ACK never reached the TU
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(16_000 + 5000);
    expect(r.layer.size).toBe(0);
  });

  it('give up with timer H at 64·T1 when no ACK comes', () => {
    const r = rig();
    const invite = request('INVITE', newBranch());
    r.layer.receive(invite, TRUNK);
    (r.servers[0] as ServerTransaction).respond(reply(invite, 603));
    r.timers.runUntil(31_999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(32_000);
    expect(r.heard.at(-1)).toEqual({ kind: 'server-timeout' });
    expect(r.layer.size).toBe(0);
    expect(r.timers.pending).toBe(0);
  });

  it('over TCP send no G retransmissions and end at once on the ACK (I = 0)', () => {
    const r = rig();
    const branch = newBranch();
    const invite = request('INVITE', branch, 'TCP');
    r.layer.receive(invite, TRUNK);
    (r.servers[0] as ServerTransaction).respond(reply(invite, 486));
    r.timers.runUntil(10_000);
    expect(r.statuses()).toEqual([486]);
    r.layer.receive(request('ACK', branch, 'TCP'), TRUNK);
    expect(r.layer.size).toBe(0);
  });

  it('in Accepted absorb retransmitted INVITEs, send the TU’s 2xx again, pass the ACK up, end after L', () => {
    const r = rig();
    const branch = newBranch();
    const invite = request('INVITE', branch);
    r.layer.receive(invite, TRUNK);
    const tx = r.servers[0] as ServerTransaction;
    tx.respond(reply(invite, 200));
    r.layer.receive(invite, TRUNK);
    expect(r.statuses()).toEqual([200]);
    tx.respond(reply(invite, 200));
    expect(r.statuses()).toEqual([200, 200]);
    expect(() => tx.respond(reply(invite, 486))).toThrow(/accepted/);
    r.layer.receive(request('ACK', branch), TRUNK);
    expect(r.heard).toEqual([
      { kind: 'request', detail: 'INVITE' },
      { kind: 'ack', detail: 'ACK' },
    ]);
    r.timers.runUntil(31_999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(32_000);
    expect(r.layer.size).toBe(0);
  });
});

describe('server transport errors', () => {
  it('end the transaction and tell the TU when a response cannot be sent', () => {
    const r = rig();
    const errors: unknown[] = [];
    const layer = new TransactionLayer(
      {
        send: () => {
          throw new Error('EPIPE');
        },
        timers: r.timers,
        reliable: () => false,
      },
      {
        request: (tx) => r.servers.push(tx),
        ack: () => {},
        strayResponse: () => {},
        refused: () => {},
        serverTransportError: (_tx, error) => errors.push(String(error)),
      },
    );
    const invite = request('INVITE', newBranch());
    layer.receive(invite, TRUNK);
    (r.servers[0] as ServerTransaction).respond(reply(invite, 486));
    expect(errors).toEqual(['Error: EPIPE']);
    expect(layer.size).toBe(0);
    expect(r.timers.pending).toBe(0);
  });
});

describe('non-INVITE server transactions', () => {
  it('absorb in Trying, re-send the provisional and the final, end after J = 64·T1', () => {
    const r = rig();
    const bye = request('BYE', newBranch());
    r.layer.receive(bye, TRUNK);
    r.layer.receive(bye, TRUNK);
    r.timers.runUntil(1000);
    expect(r.statuses()).toEqual([]); // no automatic 100 for non-INVITE
    const tx = r.servers[0] as ServerTransaction;
    tx.respond(reply(bye, 100));
    r.layer.receive(bye, TRUNK);
    tx.respond(reply(bye, 200));
    r.layer.receive(bye, TRUNK);
    expect(r.statuses()).toEqual([100, 100, 200, 200]);
    expect(r.heard).toEqual([{ kind: 'request', detail: 'BYE' }]);
    r.timers.runUntil(1000 + 31_999);
    expect(r.layer.size).toBe(1);
    r.timers.runUntil(1000 + 32_000);
    expect(r.layer.size).toBe(0);
  });

  it('end at once over TCP (J = 0)', () => {
    const r = rig();
    const options = request('OPTIONS', newBranch(), 'TCP');
    r.layer.receive(options, TRUNK);
    (r.servers[0] as ServerTransaction).respond(reply(options, 200));
    expect(r.layer.size).toBe(0);
  });
});

describe('matching requests', () => {
  it('gives a CANCEL its own transaction and finds the INVITE it targets', () => {
    const r = rig();
    const branch = newBranch();
    r.layer.receive(request('INVITE', branch), TRUNK);
    r.layer.receive(request('CANCEL', branch), TRUNK);
    const [invite, cancel] = r.servers as [ServerTransaction, ServerTransaction];
    expect(cancel.request.method).toBe('CANCEL');
    expect(r.layer.cancelTarget(cancel.request)).toBe(invite);
    expect(r.layer.cancelTarget(request('CANCEL', newBranch()))).toBeUndefined();
    expect(r.layer.size).toBe(2);
  });

  it('tells transactions apart by sent-by as well as branch', () => {
    const r = rig();
    const branch = newBranch();
    const first = request('OPTIONS', branch);
    const other = request('OPTIONS', branch);
    other.headers[0] = { name: 'Via', value: `SIP/2.0/UDP 192.0.2.99:5060;branch=${branch}` };
    r.layer.receive(first, TRUNK);
    r.layer.receive(other, TRUNK);
    expect(r.heard).toEqual([
      { kind: 'request', detail: 'OPTIONS' },
      { kind: 'request', detail: 'OPTIONS' },
    ]);
  });

  it('refuses a request without the magic cookie and passes an unmatched ACK up', () => {
    const r = rig();
    r.layer.receive(request('INVITE', '1234abcd'), TRUNK);
    r.layer.receive(request('ACK', newBranch()), TRUNK);
    expect(r.heard).toEqual([
      { kind: 'refused', detail: 'no-magic-cookie' },
      { kind: 'ack', detail: 'ACK' },
    ]);
    expect(r.layer.size).toBe(0);
  });

  it('makes branches with the magic cookie, unique', () => {
    const branches = new Set(Array.from({ length: 1000 }, newBranch));
    expect(branches.size).toBe(1000);
    for (const branch of branches) expect(branch).toMatch(/^z9hG4bK[A-Za-z0-9_-]{16}$/);
  });
});
