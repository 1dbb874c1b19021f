/**
 * Voicemail end to end: outbound calls answered by a simulated answering machine, which plays its
 * greeting at once (a recorded utterance), then a beep, then records. The assistant stops talking
 * once it knows it is a machine — from the greeting's words, from the carrier's own detection
 * (carrier_a's asynchronous verdict at the greeting's end; carrier_b's at once) — waits for the
 * greeting to end, says the voicemail message into the recording, and hangs up (or hangs up at once).
 * Checked on both sides: what the machine recorded and when, and what the platform recorded (the
 * call's answered_by, its call.voicemail event, its transcript); and a campaign whose contact is a
 * machine: each attempt ends as `voicemail` and is retried.
 */
import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls, campaignContacts, campaignExecutions } from '../src/db/schema/index.js';
import { answeringMachine } from '../src/sim/answering-machine.js';
import type { CarrierBSimulator } from '../src/sim/carrier-b.js';
import type { SimulatedPhone } from '../src/sim/phone.js';
import { expectStatus, Factories } from './support/factories.js';
import { waitFor } from './support/harness.js';
import { type CallOutcome, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { carrierB } from './support/voice-rig-carrier-b.js';

let rig: VoiceRig;
let carrierBSim: CarrierBSimulator;

beforeAll(async () => {
  const b = carrierB();
  carrierBSim = b.sim;
  rig = await startVoiceRig({ carriers: [b] });
}, 60_000);
afterAll(async () => {
  await rig.close();
});

/** What the speech-to-text simulator hears for the machine's greeting. */
const GREETING_WORDS = "Hi, you've reached Ada. Please leave a message after the tone.";
const MESSAGE = 'Hi {{ name }}, this is the clinic about your appointment. Please call us back.';
const SAID = 'Hi Ada, this is the clinic about your appointment. Please call us back.';

/** The call record's meta. */
async function callMeta(callId: number): Promise<Record<string, unknown>> {
  const [row] = await rig.t.database.db
    .select({ meta: calls.callMeta })
    .from(calls)
    .where(eq(calls.id, callId));
  return row!.meta;
}

/** The machine's beep, as the phone played it. */
function beepOf(phone: SimulatedPhone) {
  const beep = phone.utterances.find((utterance) => utterance.name === 'beep');
  expect(beep, 'the machine played its beep').toBeDefined();
  return beep!;
}

/** What the machine recorded after its beep: the platform's audio heard from then on. */
function recorded(phone: SimulatedPhone, from: number) {
  return phone.heardSegments.filter((segment) => segment.endMs > from);
}

function voicemailEvent(outcome: CallOutcome) {
  const events = outcome.events.filter((event) => event.type === 'call.voicemail');
  expect(events).toHaveLength(1);
  return events[0]!.data;
}

describe('an answering machine', () => {
  it('is known by its words; the message waits for the beep, goes into the recording, and the call ends', async () => {
    const outcome = await rig.call({
      heard: [GREETING_WORDS],
      assistant: {
        llm_settings: { welcome_message: 'Hello, this is the clinic calling.' },
        voicemail_settings: { message: MESSAGE },
      },
      initiate: { variables: { name: 'Ada' } },
      // A pause before the beep longer than speech-to-text needs to finish the words.
      script: answeringMachine({ greeting: 'book-appointment', pauseMs: 1000 }),
    });
    expect(outcome.status).toBe('completed');
    expect(voicemailEvent(outcome)).toMatchObject({
      source: 'words',
      action: 'leave_message',
      greeting_end: 'beep',
      waited_ms: expect.any(Number),
    });
    expect(await callMeta(outcome.callId)).toMatchObject({
      answered_by: 'machine',
      voicemail: { source: 'words' },
    });
    // The machine recorded the message, from after its beep, and the platform ended the call.
    const beep = beepOf(outcome.phone);
    const after = recorded(outcome.phone, beep.startMs);
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]!.startMs).toBeGreaterThanOrEqual(beep.endMs);
    // About four seconds of voice: the whole message.
    expect(after.at(-1)!.endMs - after[0]!.startMs).toBeGreaterThan(2000);
    expect(['hang-up', 'platform']).toContain(outcome.phoneCall.endedBy);
    expect(outcome.transcript.at(-1)).toMatchObject({ speaker: 'assistant', text: SAID });
    expect(outcome.turns.at(-1)).toMatchObject({ kind: 'goodbye', assistant_text: SAID, interrupted: false });
    // The greeting's words were never answered: no turn replied to the machine.
    expect(outcome.turns.filter((turn) => turn.kind === 'reply')).toEqual([]);
  }, 60_000);

  it("is known by carrier_a's asynchronous detection at the end of a greeting without a beep", async () => {
    rig.carrier.setCallOutcome('*', { status: 'completed', durationSeconds: 30, answeredBy: 'machine' });
    let outcome: CallOutcome;
    try {
      outcome = await rig.call({
        // Nothing in these words says "machine", and the greeting is short: only the carrier knows.
        heard: ['Hi, this is Ada.'],
        assistant: { end_call_message: 'Sorry we missed you, {{ name }}. Goodbye.' },
        initiate: { variables: { name: 'Ada' } },
        script: answeringMachine({ greeting: 'three-oclock', beep: false }),
      });
    } finally {
      rig.carrier.setCallOutcome('*', { status: 'completed', durationSeconds: 30 });
    }
    expect(voicemailEvent(outcome)).toMatchObject({
      source: 'carrier',
      action: 'leave_message',
      greeting_end: 'carrier',
    });
    const verdicts = outcome.events.filter((event) => event.type === 'call.machine_detection');
    expect(verdicts.map((event) => event.data)).toEqual([
      { call_sid: expect.any(String), answered_by: 'machine', greeting_ended: 'other' },
    ]);
    expect(await callMeta(outcome.callId)).toMatchObject({
      answered_by: 'machine',
      voicemail: { source: 'carrier' },
    });
    // The message (the end_call_message by default) went in after the greeting.
    const greeting = outcome.phone.utterances.find((utterance) => utterance.name === 'greeting')!;
    expect(recorded(outcome.phone, greeting.endMs + 1000).length).toBeGreaterThan(0);
    expect(outcome.transcript.at(-1)).toMatchObject({
      speaker: 'assistant',
      text: 'Sorry we missed you, Ada. Goodbye.',
    });
  }, 60_000);

  it("hangs up at once with action hang_up, on carrier_b's verdict that comes as the call connects", async () => {
    carrierBSim.setCallOutcome('*', { status: 'completed', durationSeconds: 30, answeredBy: 'machine' });
    let outcome: CallOutcome;
    try {
      outcome = await rig.call({
        vendors: { carrier: 'carrier_b' },
        heard: ['Hi, this is Ada.'],
        assistant: { voicemail_settings: { action: 'hang_up', message: 'never said' } },
        script: answeringMachine({ greeting: 'book-appointment' }),
      });
    } finally {
      carrierBSim.setCallOutcome('*', { status: 'completed', durationSeconds: 30 });
    }
    expect(voicemailEvent(outcome)).toEqual({ source: 'carrier', action: 'hang_up', waited_ms: 0 });
    expect(await callMeta(outcome.callId)).toMatchObject({ answered_by: 'machine' });
    // Ended by the platform before the machine's beep.
    expect(outcome.phone.utterances.some((utterance) => utterance.name === 'beep')).toBe(false);
    expect(outcome.transcript.some((segment) => segment.text === 'never said')).toBe(false);
  }, 60_000);

  it('a person (the carrier says so) is no machine: the conversation goes on', async () => {
    rig.carrier.setCallOutcome('*', { status: 'completed', durationSeconds: 30, answeredBy: 'human' });
    let outcome: CallOutcome;
    try {
      outcome = await rig.call({
        // Words a machine would say, from a person the carrier heard: its verdict wins.
        heard: ['Please leave a message after the tone, I am joking, hello!'],
        assistant: { llm_settings: { welcome_message: 'Hello!' } },
        turns: 2,
        script: async (phone) => {
          await phone.waitForSpeech();
          await phone.waitForSilence({ ms: 600 });
          const asked = await phone.say('book-appointment');
          await phone.waitForReplyTo(asked);
          await phone.waitForSilence({ ms: 600 });
        },
      });
    } finally {
      rig.carrier.setCallOutcome('*', { status: 'completed', durationSeconds: 30 });
    }
    expect(outcome.events.filter((event) => event.type === 'call.voicemail')).toEqual([]);
    expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting', 'reply']);
    expect(await callMeta(outcome.callId)).toMatchObject({ answered_by: 'human' });
  }, 60_000);
});

describe('a campaign whose contact is an answering machine', () => {
  it('ends each attempt as voicemail and retries it', async () => {
    const f = new Factories(rig.t);
    const org = await rig.carriers.carrier_a!.organization(f);
    const keys = { llm: 'llm-key-vm-campaign', stt: 'stt-key-vm-campaign', tts: 'tts-key-vm-campaign' };
    rig.llm.addKey(keys.llm);
    rig.stt.addKey(keys.stt);
    rig.tts.addKey(keys.tts);
    rig.stt.setScript(keys.stt, [GREETING_WORDS]);
    expectStatus(
      await rig.t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: org.admin.headers,
        payload: {
          api_keys: {
            llm_a: { api_key: keys.llm },
            stt_a: { api_key: keys.stt },
            tts_a: { api_key: keys.tts },
          },
        },
      }),
      200,
    );
    expectStatus(
      await rig.t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${org.assistantId}`,
        headers: org.admin.headers,
        payload: { voicemail_settings: { message: 'Hello {{ name }}, please call the clinic back.' } },
      }),
      200,
    );
    const contact = '+14158889901';
    rig.carrier.setPhone(contact, answeringMachine({ greeting: 'book-appointment', pauseMs: 1000 }));
    const created = await rig.t.app.inject({
      method: 'POST',
      url: '/api/v1/campaigns',
      headers: org.admin.headers,
      payload: {
        name: 'Reminders',
        campaign_type: 'call',
        assistant_id: org.assistantId,
        retry_delay_minutes: 0,
        max_attempts: 2,
      },
    });
    expectStatus(created, 201);
    const campaignId = created.json().id as number;
    expectStatus(
      await rig.t.app.inject({
        method: 'POST',
        url: `/api/v1/campaigns/${campaignId}/contacts`,
        headers: org.admin.headers,
        payload: { contacts: [{ phone_number: contact, name: 'Ada' }] },
      }),
      200,
    );
    expectStatus(
      await rig.t.app.inject({
        method: 'POST',
        url: `/api/v1/campaigns/${campaignId}/start`,
        headers: org.admin.headers,
      }),
      200,
    );
    const executions = () =>
      rig.t.database.db
        .select({
          attempt: campaignExecutions.attemptNumber,
          status: campaignExecutions.status,
          callId: campaignExecutions.callId,
          data: campaignExecutions.executionData,
        })
        .from(campaignExecutions)
        .innerJoin(campaignContacts, eq(campaignContacts.id, campaignExecutions.contactId))
        .where(eq(campaignExecutions.campaignId, campaignId))
        .orderBy(asc(campaignExecutions.attemptNumber));
    const done = await waitFor(async () => {
      const rows = await executions();
      return rows.length === 2 && rows.every((row) => row.status === 'voicemail') ? rows : undefined;
    }, 90_000);
    expect(done.map((row) => row.attempt)).toEqual([1, 2]);
    expect(done[1]!.data.retry_reason).toBe('previous attempt voicemail');
    for (const row of done) {
      expect(await callMeta(row.callId!)).toMatchObject({
        answered_by: 'machine',
        voicemail: { source: 'words' },
      });
      const [left] = await rig.t.database.db
        .select({ data: callEvents.data })
        .from(callEvents)
        .where(and(eq(callEvents.callId, row.callId!), eq(callEvents.type, 'call.voicemail')));
      expect(left?.data).toMatchObject({ source: 'words', action: 'leave_message', greeting_end: 'beep' });
    }
  }, 120_000);
});
