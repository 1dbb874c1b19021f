/**
 * The rig the SIP user-agent tests share: UserAgents on an in-memory network (test/support/sip-network.ts)
 * on fake time, a hand-written trunk that records what it receives and sends what a test types, and
 * `clean()`, which runs the clock past every transaction's last timer and checks nothing is left.
 */
import { expect } from 'vitest';
import { header } from '../../src/sip/headers.js';
import { isRequest, type SipMessage, type SipRequest, type SipResponse } from '../../src/sip/message.js';
import { buildResponse } from '../../src/sip/response.js';
import type { Peer } from '../../src/sip/transaction-common.js';
import { type IncomingCall, UserAgent } from '../../src/sip/user-agent.js';
import { FakeTimers } from './fake-timers.js';
import { MemoryNetwork } from './sip-network.js';

export const A: Peer = { host: '203.0.113.10', port: 5060 };
export const B: Peer = { host: '198.51.100.7', port: 5060 };
export const TRUNK: Peer = { host: '198.51.100.20', port: 5060 };
export const OFFER =
  'v=0\r\no=- 1 1 IN IP4 203.0.113.10\r\ns=-\r\nc=IN IP4 203.0.113.10\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n';
export const ANSWER =
  'v=0\r\no=- 2 1 IN IP4 198.51.100.7\r\ns=-\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\nm=audio 41000 RTP/AVP 0\r\n';

export function world() {
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

export const inviteTo = (destination: Peer, extra: Partial<Parameters<UserAgent['invite']>[0]> = {}) => ({
  requestUri: `sip:+15557654321@${destination.host}`,
  from: { uri: 'sip:+15551230000@203.0.113.10', displayName: 'Switchboard' },
  to: `sip:+15557654321@${destination.host}`,
  destination,
  transport: 'udp' as const,
  sdp: OFFER,
  ...extra,
});

/** A response from the trunk with its tag and Contact. */
export const trunkReply = (request: SipRequest, status: number, body?: string) =>
  buildResponse(request, status, {
    toTag: 'trunk1',
    headers: [
      { name: 'Contact', value: `<sip:gw@${TRUNK.host}:${TRUNK.port}>` },
      ...(body ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
    ],
    ...(body ? { body: Buffer.from(body) } : {}),
  });

/** A request the trunk sends to A out of dialog or in the dialog it shares with A. */
export function trunkRequest(
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
