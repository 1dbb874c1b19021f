/**
 * A transfer through a trunk that does not take REFER (issue 21: "REFER, or a re-INVITE/bridge where
 * the trunk does not take REFER"), end to end: the platform's SIP agent against a trunk played by the
 * platform's own SIP pieces on loopback (test/support/sip-trunk-peer.ts) — which answers REFER 405 and,
 * unlike sipp, hears the audio of every call it carries. The caller asks to be transferred; the
 * platform calls the target through the trunk, plays ringback meanwhile, and once the target answers
 * carries audio both ways between the two calls until one hangs up.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { voiceFixture } from '../src/sim/phone-voice.js';
import { waitFor } from './support/harness.js';
import { type SipRig, startSipRig } from './support/sip-rig.js';
import {
  type HeardFrame,
  level,
  type PeerCall,
  SipTrunkPeer,
  tone,
  toneFrequency,
} from './support/sip-trunk-peer.js';

let rig: SipRig;
let peer: SipTrunkPeer | undefined;

beforeAll(async () => {
  rig = await startSipRig({ SIP_RING_TIMEOUT_SECONDS: '10' });
}, 60_000);
afterEach(async () => {
  await peer?.close();
  peer = undefined;
});
afterAll(async () => {
  await rig?.close();
});

const CUSTOMER = '+14155550123';
const TARGET = '+14155550199';
/** Audible, as opposed to the comfort silence the platform sends between words. */
const AUDIBLE = 300;

async function startPeer(answer: (to: string) => { ringMs?: number; refuse?: number }) {
  peer = await SipTrunkPeer.start({ rtpMin: 46000 + 40 * Math.floor(Math.random() * 50), answer });
  return peer;
}

/** An organization whose assistant transfers to TARGET when asked. */
function transferringOrganization(port: number) {
  return rig.organization({
    port,
    heard: ['Please transfer me to a real person'],
    llm: [{ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: TARGET } }] }],
    assistant: {
      tools_settings: { transfer_call: { enabled: true, transfer_numbers: [TARGET] } },
      transfer_call_message: 'Connecting you now.',
    },
  });
}

/** Waits until the greeting has played (audible audio, then `quietMs` without), then asks for a person. */
async function askForTransfer(customer: PeerCall, quietMs = 800): Promise<void> {
  await waitFor(() => {
    const spoken = customer.heard.findLast((frame) => level([frame]) > AUDIBLE);
    return spoken && Date.now() - spoken.at > quietMs ? true : undefined;
  }, 20_000);
  customer.play(voiceFixture('transfer-me'));
}

const between = (frames: HeardFrame[], from: number, to: number) =>
  frames.filter((frame) => frame.at >= from && frame.at < to);

describe('a transfer through a trunk that does not take REFER', () => {
  it('calls the target through the trunk, rings back, then bridges audio both ways until one side hangs up', async () => {
    const trunk = await startPeer((to) => (to === TARGET ? { ringMs: 1500 } : {}));
    const org = await transferringOrganization(trunk.port);
    const callId = await rig.dial(org, CUSTOMER);
    const customer = await trunk.call(0);
    expect(customer.to).toBe(CUSTOMER);
    await askForTransfer(customer);

    // The trunk refused the REFER (405), so the platform called the target itself, from the number.
    const target = await trunk.call(1, 30_000);
    expect({ to: target.to, from: target.from }).toEqual({ to: TARGET, from: org.number });
    await waitFor(() => (target.answeredAt > 0 ? true : undefined));

    // While the target rang, the customer heard ringback: 440 + 480 Hz, beating at about 460.
    const ringing = between(customer.heard, target.invitedAt + 200, target.answeredAt).filter(
      (frame) => level([frame]) > AUDIBLE,
    );
    expect(ringing.length).toBeGreaterThan(25);
    expect(toneFrequency(ringing)).toBeGreaterThan(420);
    expect(toneFrequency(ringing)).toBeLessThan(500);

    // The target's voice reaches the customer …
    const targetSpoke = Date.now();
    target.play(tone(1000, 1200));
    await waitFor(() => (level(between(customer.heard, targetSpoke, Infinity)) > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const relayed = between(customer.heard, targetSpoke, Infinity).filter(
      (frame) => level([frame]) > AUDIBLE,
    );
    expect(relayed.length).toBeGreaterThan(40);
    expect(toneFrequency(relayed)).toBeGreaterThan(950);
    expect(toneFrequency(relayed)).toBeLessThan(1050);

    // … and the customer's reaches the target.
    const customerSpoke = Date.now();
    customer.play(voiceFixture('book-appointment'));
    await waitFor(() =>
      between(target.heard, customerSpoke, Infinity).filter((frame) => level([frame]) > AUDIBLE).length > 25
        ? true
        : undefined,
    );

    // The target hangs up: the platform hangs up on the customer, and the call is over.
    await target.hangUp();
    await waitFor(() => (customer.ended ? true : undefined));
    const { call, events } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    expect(events.find((event) => event.type === 'call.transferred')?.data).toEqual({ to: TARGET });
    const metrics = await rig.t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/switchboard_sip_transfers_total\{method="bridge",outcome="done"\} [1-9]/);
  }, 90_000);

  it('hangs up the target when the customer hangs up first', async () => {
    const trunk = await startPeer(() => ({}));
    const org = await transferringOrganization(trunk.port);
    await rig.dial(org, CUSTOMER);
    const customer = await trunk.call(0);
    await askForTransfer(customer);
    const target = await trunk.call(1, 30_000);
    await waitFor(() => (target.answeredAt > 0 ? true : undefined));
    await customer.hangUp();
    await waitFor(() => (target.ended ? true : undefined));
  }, 90_000);

  it('cancels the target’s call when the customer hangs up while it rings', async () => {
    const trunk = await startPeer((to) => (to === TARGET ? { ringMs: 8000 } : {}));
    const org = await transferringOrganization(trunk.port);
    const callId = await rig.dial(org, CUSTOMER);
    const customer = await trunk.call(0);
    await askForTransfer(customer);
    const target = await trunk.call(1, 30_000);
    await customer.hangUp();
    await waitFor(() => (target.incoming.phase === 'cancelled' ? true : undefined));
    const { call, events } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    expect(events.map((event) => event.type)).not.toContain('call.transferred');
  }, 90_000);

  it('ends the call when the target is busy, and records no transfer', async () => {
    const trunk = await startPeer((to) => (to === TARGET ? { refuse: 486 } : {}));
    const org = await transferringOrganization(trunk.port);
    const callId = await rig.dial(org, CUSTOMER);
    const customer = await trunk.call(0);
    await askForTransfer(customer);
    await waitFor(() => (customer.ended ? true : undefined), 30_000);
    const { call, events } = await rig.finished(org, callId);
    expect(call.status).toBe('completed');
    expect(events.map((event) => event.type)).not.toContain('call.transferred');
    const metrics = await rig.t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/switchboard_sip_transfers_total\{method="bridge",outcome="failed"\} [1-9]/);
  }, 90_000);
});
