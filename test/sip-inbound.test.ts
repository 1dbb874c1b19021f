/**
 * Inbound calls through a SIP trunk: sipp plays the trunk ringing one of the organization's numbers
 * on the platform's SIP agent. A call from the trunk's address is answered by the number's assistant
 * and holds a conversation; an INVITE from anywhere else, for a number nobody has, or for a trunk
 * that takes no inbound calls is refused with the same 403 and leaves no call behind; malformed
 * datagrams and streams never stop the agent.
 */
import { createSocket } from 'node:dgram';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calls } from '../src/db/schema/index.js';
import { waitFor } from './support/harness.js';
import { type SipRig, startSipRig } from './support/sip-rig.js';
import { startSipp } from './support/sipp.js';

let rig: SipRig;
let agent: string;

beforeAll(async () => {
  rig = await startSipRig();
  agent = `127.0.0.1:${rig.agent.address.port}`;
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

async function callCount(): Promise<number> {
  return (await rig.t.database.db.select({ id: calls.id }).from(calls)).length;
}

describe('an inbound call through the trunk', () => {
  it('is answered by the number’s assistant, which greets, hears and answers the caller', async () => {
    const org = await rig.organization({
      port: 5060,
      heard: ['I would like to book an appointment for tomorrow'],
      llm: [{ text: 'We have an opening at three.' }],
    });
    const caller = await startSipp({
      scenario: 'uac_call_and_talk.xml',
      remote: agent,
      service: org.number,
      audio: 'book-appointment',
      timeoutSeconds: 40,
    });
    const sipp = await caller.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const list = await rig.t.app.inject({ method: 'GET', url: '/api/v1/calls', headers: org.admin.headers });
    const [listed] = list.json() as Array<{ id: number }>;
    expect(listed).toBeDefined();
    const { call, turns, transcript } = await rig.finished(org, listed!.id);
    expect(call).toMatchObject({ status: 'completed', direction: 'inbound' });
    expect(transcript[0]).toMatchObject({ speaker: 'assistant', text: 'Hello, this is the clinic.' });
    const reply = turns.find((turn) => turn.kind === 'reply');
    expect(reply).toMatchObject({
      user_text: 'I would like to book an appointment for tomorrow',
      assistant_text: 'We have an opening at three.',
    });
  }, 60_000);

  it('is refused (403) from an address that is not the trunk’s, with no call recorded', async () => {
    const org = await rig.organization({ port: 5060, inboundAddresses: ['192.0.2.10'] });
    const before = await callCount();
    const caller = await startSipp({
      scenario: 'uac_invite_refused.xml',
      remote: agent,
      service: org.number,
    });
    const sipp = await caller.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    expect(await callCount()).toBe(before);
  }, 30_000);

  it('from elsewhere, proves the trunk’s credentials when challenged, and is answered', async () => {
    const org = await rig.organization({
      port: 5060,
      inboundAddresses: ['192.0.2.10'],
      username: 'alice',
      password: 's3cret',
    });
    const caller = await startSipp({
      scenario: 'uac_invite_auth.xml',
      remote: agent,
      service: org.number,
      auth: { username: 'alice', password: 's3cret' },
      timeoutSeconds: 30,
    });
    const sipp = await caller.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const list = await rig.t.app.inject({ method: 'GET', url: '/api/v1/calls', headers: org.admin.headers });
    const [listed] = list.json() as Array<{ id: number }>;
    expect((await rig.finished(org, listed!.id)).call).toMatchObject({
      status: 'completed',
      direction: 'inbound',
    });
  }, 40_000);

  it('is refused alike for a number nobody has, and when the trunk takes no inbound calls', async () => {
    const closed = await rig.organization({ port: 5060, inboundEnabled: false });
    const before = await callCount();
    for (const service of ['+15550009999', closed.number]) {
      const caller = await startSipp({ scenario: 'uac_invite_refused.xml', remote: agent, service });
      const sipp = await caller.done;
      expect(sipp.code, `${service}: ${sipp.errors || sipp.output}`).toBe(0);
    }
    expect(await callCount()).toBe(before);
  }, 30_000);
});

describe('malformed SIP', () => {
  it('never stops the agent: garbage over UDP and TCP is counted, and a real request still works', async () => {
    const port = rig.agent.address.port;
    const before = rig.agent.parseErrors;
    const udp = createSocket('udp4');
    const garbage = [
      Buffer.from('INVITE sip:x SIP/2.0\r\nVia: nonsense\r\n\r\n'),
      Buffer.from('SIP/2.0 200\r\n\r\n'),
      Buffer.from('OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 99999999\r\n\r\n'),
      Buffer.from([0, 1, 2, 3, 255, 254, 13, 10, 13, 10]),
      Buffer.alloc(70_000, 65),
    ];
    for (const datagram of garbage.slice(0, 4)) udp.send(datagram, port, '127.0.0.1');
    await new Promise<void>((resolve) => {
      const tcp = connect(port, '127.0.0.1', () => {
        tcp.write('REGISTER sip:x SIP/2.0\r\nContent-Length: nope\r\n\r\n');
        tcp.end(garbage[4]!);
      });
      tcp.on('close', () => resolve());
      tcp.on('error', () => resolve());
    });
    await waitFor(() => (rig.agent.parseErrors >= before + 3 ? true : undefined));
    udp.close();
    // Counted on /metrics too, beside the refusals (by reason) of the tests above.
    const metrics = (await rig.t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const malformed = Number(/^switchboard_sip_malformed_messages_total (\d+)/m.exec(metrics)?.[1]);
    expect(malformed).toBeGreaterThanOrEqual(before + 3);
    expect(metrics).toMatch(/^switchboard_sip_inbound_refused_total\{reason="unknown-number"\} [1-9]/m);
    // The agent still answers: an inbound call from a stranger is refused as before.
    const caller = await startSipp({
      scenario: 'uac_invite_refused.xml',
      remote: `127.0.0.1:${port}`,
      service: '+15550001111',
    });
    const sipp = await caller.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
  }, 30_000);
});
