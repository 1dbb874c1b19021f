/**
 * Keys in live calls, end to end through the simulated phone (support/voice-rig.ts): the model asks
 * for an account number and collects it with collect_digits; keys no tool collects reach the model
 * as a caller turn and stop the assistant like speech; send_digits plays tones the phone hears in the
 * audio on carrier_a (no DTMF command) and goes by command on carrier_b, whose simulator tells the
 * phone.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CarrierBSimulator } from '../src/sim/carrier-b.js';
import type { SimulatedPhone } from '../src/sim/phone.js';
import { waitFor } from './support/harness.js';
import {
  afterGreeting,
  hearAnswer,
  LONG_ANSWER,
  sleep,
  startVoiceRig,
  type VoiceRig,
} from './support/voice-rig.js';
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
afterEach(() => {
  rig.llm.respond(undefined);
});

/** Presses keys as a person does, a key every 150 ms. */
async function press(phone: SimulatedPhone, digits: string): Promise<void> {
  for (const digit of digits) {
    phone.dtmf(digit);
    await sleep(150);
  }
}

const toolNames = (request: { tools: Array<Record<string, unknown>> }) =>
  request.tools.map((tool) => (tool.function as { name: string }).name);

const lastMessage = (request: { messages: Array<Record<string, unknown>> }) => request.messages.at(-1);

describe('keys in a live call', () => {
  it('collects an account number the model asked for, and gives it to the model, not the conversation', async () => {
    // The model says back what the tool gave it.
    rig.llm.respond((request) => {
      const last = lastMessage(request);
      if (last?.role !== 'tool') return undefined;
      const { digits } = JSON.parse(String(last.content)) as { digits: string | null };
      return { text: `Thank you, I have account ${digits}.` };
    });
    const outcome = await rig.call({
      heard: ['I would like to check my balance'],
      assistant: { tools_settings: { enabled_tools: ['collect_digits'] } },
      llm: [
        {
          text: 'Please enter your account number followed by the pound key.',
          toolCalls: [{ name: 'collect_digits', arguments: { max_digits: 8 } }],
        },
      ],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await hearAnswer(phone);
        await press(phone, '4521#');
        await hearAnswer(phone);
      },
    });
    const [first, second] = outcome.llmRequests;
    expect(toolNames(first!)).toEqual(['collect_digits']);
    expect(lastMessage(second!)).toMatchObject({ role: 'tool', content: '{"digits":"4521"}' });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toBe(
      'Please enter your account number followed by the pound key. Thank you, I have account 4521.',
    );
    // The keys went to the tool: no caller turn, nothing in the transcript.
    expect(outcome.turns.map((turn) => turn.kind)).toEqual(['greeting', 'reply']);
    expect(JSON.stringify(outcome.transcript)).not.toContain('pressed');
    expect(outcome.events.filter((e) => e.type === 'call.dtmf').map((e) => e.data.digit)).toEqual([
      '4',
      '5',
      '2',
      '1',
      '#',
    ]);
    expect(outcome.events.find((e) => e.type === 'call.tool')?.data).toMatchObject({
      name: 'collect_digits',
      ok: true,
      result: '{"digits":"4521"}',
    });
  }, 60_000);

  it('tells the model keys no tool collects as a caller turn, shown in the transcript', async () => {
    const outcome = await rig.call({
      heard: [],
      script: async (phone) => {
        await afterGreeting(phone);
        await press(phone, '123#');
        await hearAnswer(phone);
      },
    });
    const keys = '[The caller pressed: 1 2 3 #]';
    expect(lastMessage(outcome.llmRequests[0]!)).toEqual({ role: 'user', content: keys });
    expect(outcome.turns[1]).toMatchObject({ kind: 'reply', user_text: keys });
    expect(outcome.transcript).toContainEqual(expect.objectContaining({ speaker: 'user', text: keys }));
    expect(outcome.turns[1]?.assistant_text).toBe(`You said: ${keys}. How else can I help?`);
  }, 60_000);

  it('stops the assistant at once when a key is pressed while it speaks', async () => {
    const outcome = await rig.call({
      heard: ['What times do you have'],
      llm: [{ text: LONG_ANSWER }],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await phone.waitForSpeech({ timeoutMs: 10_000 });
        await sleep(1_000);
        phone.dtmf('0');
        // The answer stops; the key's turn is over 2 s later, and its answer comes.
        await phone.waitForSilence({ ms: 300 });
        await hearAnswer(phone);
      },
    });
    expect(outcome.turns.map((turn) => [turn.kind, turn.interrupted])).toEqual([
      ['greeting', false],
      ['reply', true],
      ['reply', false],
    ]);
    expect(outcome.turns[2]?.user_text).toBe('[The caller pressed: 0]');
    expect(outcome.phone.clears.length).toBeGreaterThanOrEqual(1);
    expect(outcome.events.map((e) => e.type)).toContain('call.interrupted');
  }, 60_000);

  it('sends keys as tones in the audio on carrier_a, which has no DTMF command', async () => {
    const outcome = await rig.call({
      heard: ['Please navigate the menu for me'],
      assistant: { tools_settings: { enabled_tools: ['send_digits'] } },
      llm: [{ toolCalls: [{ name: 'send_digits', arguments: { digits: '12w3#' } }] }, { text: 'Done.' }],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await waitFor(() => phone.dtmfHeard.length >= 4, 15_000);
        await hearAnswer(phone);
      },
    });
    const heard = outcome.phone.dtmfHeard;
    expect(heard.map((h) => [h.digit, h.via])).toEqual([
      ['1', 'tone'],
      ['2', 'tone'],
      ['3', 'tone'],
      ['#', 'tone'],
    ]);
    // The `w` paused half a second between the 2 and the 3.
    expect(heard[2]!.atMs - heard[1]!.atMs).toBeGreaterThanOrEqual(500);
    expect(outcome.events.find((e) => e.type === 'call.digits_sent')?.data).toEqual({
      digits: '12w3#',
      via: 'in_band',
    });
    expect(lastMessage(outcome.llmRequests[1]!)).toMatchObject({ role: 'tool', content: '{"sent":"12w3#"}' });
    expect(outcome.turns.find((turn) => turn.kind === 'reply')?.assistant_text).toBe('Done.');
  }, 60_000);

  it("sends keys by carrier_b's command, which its simulator plays to the phone", async () => {
    const outcome = await rig.call({
      vendors: { carrier: 'carrier_b' },
      heard: ['Please navigate the menu for me'],
      assistant: { tools_settings: { enabled_tools: ['send_digits'] } },
      llm: [{ toolCalls: [{ name: 'send_digits', arguments: { digits: '12w3#' } }] }, { text: 'Done.' }],
      script: async (phone) => {
        await afterGreeting(phone);
        await phone.say('book-appointment');
        await waitFor(() => phone.dtmfHeard.length >= 4, 15_000);
        await hearAnswer(phone);
      },
    });
    expect(carrierBSim.dtmfSent).toContainEqual({
      callControlId: outcome.phoneCall.callSid,
      digits: '12w3#',
    });
    expect(outcome.phone.dtmfHeard.map((h) => [h.digit, h.via])).toEqual([
      ['1', 'command'],
      ['2', 'command'],
      ['3', 'command'],
      ['#', 'command'],
    ]);
    expect(outcome.events.find((e) => e.type === 'call.digits_sent')?.data).toEqual({
      digits: '12w3#',
      via: 'carrier',
    });
    expect(outcome.turns.find((turn) => turn.kind === 'reply')?.assistant_text).toBe('Done.');
  }, 60_000);
});
