/**
 * Calls through a bring-your-own SIP trunk, end to end: the platform's SIP agent against sipp
 * (Debian's sip-tester) playing the organization's trunk on loopback, the voice vendors simulated.
 * Each test is one line of issue 21's list: a two-turn conversation with audio both ways, a digest
 * challenge, busy, no answer, and the trunk hanging up mid-sentence — checked on the platform's
 * records (status, SIP status kept, turns, transcript) and on sipp's verdict (exit code 0: every
 * message as the scenario expects).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SipRig, startSipRig } from './support/sip-rig.js';
import { startSipp } from './support/sipp.js';

let rig: SipRig;

beforeAll(async () => {
  rig = await startSipRig({ SIP_RING_TIMEOUT_SECONDS: '5' });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

const CUSTOMER = '+14155550123';

describe('an outbound call through the trunk', () => {
  it('rings, is answered, and holds a two-turn conversation heard from the trunk’s audio', async () => {
    const trunk = await startSipp({
      scenario: 'uas_conversation.xml',
      audio: 'book-appointment',
      audio2: 'three-oclock',
      timeoutSeconds: 60,
    });
    const org = await rig.organization({
      port: trunk.port,
      heard: ['I would like to book an appointment for tomorrow', 'Yes, three o clock works for me'],
      llm: [{ text: 'We have an opening at three.' }, { text: 'Booked. See you then.' }],
    });
    const callId = await rig.dial(org, CUSTOMER);
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const { call, turns, transcript, events } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    expect(call.duration).toBeGreaterThanOrEqual(15);
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['call.placed', 'call.ringing', 'call.in-progress', 'call.completed']),
    );
    // The trunk's audio reached the hearing (what the simulator heard, in order) …
    const replies = turns.filter((turn) => turn.kind === 'reply');
    expect(replies.map((turn) => turn.user_text)).toEqual([
      'I would like to book an appointment for tomorrow',
      'Yes, three o clock works for me',
    ]);
    // … and the answers were spoken into the call (the transcript keeps what was said).
    expect(replies.map((turn) => turn.assistant_text)).toEqual([
      'We have an opening at three.',
      'Booked. See you then.',
    ]);
    expect(transcript[0]).toMatchObject({ speaker: 'assistant', text: 'Hello, this is the clinic.' });
  }, 90_000);

  // The same call over each transport: sipp checks the credentials (verifyauth) and answers; the call
  // is up until we hang it up.
  const challenged = [
    ['udp', 'uas_401_then_200.xml'],
    ['tcp', 'uas_401_tcp.xml'],
  ] as const;
  for (const [transport, scenario] of challenged) {
    it(`answers the trunk’s digest challenge with the organization’s credentials over ${transport.toUpperCase()}`, async () => {
      const trunk = await startSipp({ scenario, transport, timeoutSeconds: 30 });
      const org = await rig.organization({
        port: trunk.port,
        transport,
        username: 'alice',
        password: 's3cret',
      });
      const callId = await rig.dial(org, CUSTOMER);
      expect(await rig.reached(org, callId, 'in-progress')).toBe('in-progress');
      const ended = await rig.t.app.inject({
        method: 'POST',
        url: `/api/v1/calls/${callId}/end`,
        headers: org.admin.headers,
      });
      expect(ended.statusCode, ended.body).toBeLessThan(300);
      const sipp = await trunk.done;
      expect(sipp.code, sipp.errors || sipp.output).toBe(0);
      expect((await rig.finished(org, callId)).call.status).toBe('completed');
    }, 60_000);
  }

  it('is refused with a wrong password: failed, with the trunk’s 403 kept', async () => {
    const trunk = await startSipp({ scenario: 'uas_401_then_200.xml', timeoutSeconds: 30 });
    const org = await rig.organization({ port: trunk.port, username: 'alice', password: 'wrong' });
    const callId = await rig.dial(org, CUSTOMER);
    const { call, events } = await rig.finished(org, callId);
    expect(call.status).toBe('failed');
    expect(call.call_meta).toMatchObject({ sip_status: 403 });
    expect(events.find((event) => event.type === 'call.failed')?.data).toMatchObject({ sip_status: 403 });
    trunk.kill();
  }, 60_000);

  it('ends busy on 486, the SIP status kept', async () => {
    const trunk = await startSipp({ scenario: 'uas_486_busy.xml', timeoutSeconds: 30 });
    const org = await rig.organization({ port: trunk.port });
    const callId = await rig.dial(org, CUSTOMER);
    const { call } = await rig.finished(org, callId);
    expect(call.status).toBe('busy');
    expect(call.call_meta).toMatchObject({ sip_status: 486, error: 'Busy Here' });
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
  }, 60_000);

  it('ends no-answer when nobody answers within the ring time-out: CANCEL, 487', async () => {
    const trunk = await startSipp({ scenario: 'uas_ring_no_answer.xml', timeoutSeconds: 30 });
    const org = await rig.organization({ port: trunk.port });
    const callId = await rig.dial(org, CUSTOMER);
    const { call, events } = await rig.finished(org, callId, 30_000);
    expect(call.status).toBe('no-answer');
    expect(events.map((event) => event.type)).toContain('call.ringing');
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
  }, 60_000);

  it('records what was heard of the answer when the trunk hangs up in the middle of it', async () => {
    const trunk = await startSipp({
      scenario: 'uas_speak_then_bye.xml',
      audio: 'book-appointment',
      timeoutSeconds: 30,
    });
    const org = await rig.organization({
      port: trunk.port,
      heard: ['I would like to book an appointment for tomorrow'],
      llm: [{ text: LONG_ANSWER }],
    });
    const callId = await rig.dial(org, CUSTOMER);
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const { call, turns } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    // The trunk spoke A-law (PCMA, payload 8): heard all the same.
    const reply = turns.find((turn) => turn.kind === 'reply');
    expect(reply?.user_text).toBe('I would like to book an appointment for tomorrow');
    expect(reply?.interrupted).toBe(true);
    expect(LONG_ANSWER.startsWith(reply!.assistant_text)).toBe(true);
    expect(reply!.assistant_text.length).toBeLessThan(LONG_ANSWER.length);
  }, 60_000);

  it('moves the call with REFER when the assistant transfers it, and leaves once the trunk says it went', async () => {
    const trunk = await startSipp({ scenario: 'uas_refer.xml', audio: 'transfer-me', timeoutSeconds: 40 });
    const org = await rig.organization({
      port: trunk.port,
      heard: ['Please transfer me to a real person'],
      llm: [{ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: '+14155550199' } }] }],
      assistant: {
        tools_settings: { transfer_call: { enabled: true, transfer_numbers: ['+14155550199'] } },
        transfer_call_message: 'Connecting you now.',
      },
    });
    const callId = await rig.dial(org, CUSTOMER);
    const sipp = await trunk.done;
    // sipp took the REFER (202), told how it went (NOTIFY 200), and then got our BYE.
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const { call, events } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    expect(events.find((event) => event.type === 'call.transferred')?.data).toEqual({ to: '+14155550199' });
  }, 60_000);

  it('hears the keys the trunk’s callee presses (RFC 4733 events)', async () => {
    const trunk = await startSipp({ scenario: 'uas_keys_then_bye.xml', timeoutSeconds: 30 });
    const org = await rig.organization({ port: trunk.port });
    const callId = await rig.dial(org, CUSTOMER);
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const { events } = await rig.finished(org, callId);
    expect(events.filter((event) => event.type === 'call.dtmf').map((event) => event.data.digit)).toEqual([
      '1',
      '2',
      '#',
    ]);
  }, 60_000);
});

const LONG_ANSWER =
  'Of course. We have openings tomorrow morning at nine, at ten thirty, and at eleven, and in the afternoon at two, at three, and at four thirty. Which would suit you best?';
