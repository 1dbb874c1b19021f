/**
 * How the voice rig sets up each carrier and each voice for a live call: the simulator to start, the
 * platform's environment pointing at it, the organization's credentials and number, how a number is
 * made to answer with a phone script, how a caller rings in, and which keys a voice accepts. One
 * entry per provider, so the matrix test and the per-vendor tests place calls the same way.
 */
import type { CarrierId, TtsProvider } from '../../src/providers/ids.js';
import { CarrierASimulator } from '../../src/sim/carrier-a.js';
import type { PhoneCall, PhoneScript } from '../../src/sim/carrier-a-phone.js';
import { TtsASimulator } from '../../src/sim/tts-a.js';
import { TtsBSimulator } from '../../src/sim/tts-b.js';
import { TtsCSimulator } from '../../src/sim/tts-c.js';
import { TtsDSimulator } from '../../src/sim/tts-d.js';
import type { Factories, TestUser } from './factories.js';
import type { TestPlatform } from './harness.js';

/** An organization ready to call: its admin, the assistant its number routes to, and the number. */
export interface RigOrganization {
  admin: TestUser;
  assistantId: number;
  number: string;
}

export interface RigCarrier {
  readonly id: CarrierId;
  /** Starts the simulator; the platform's environment pointing at it. */
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** A fresh organization with this carrier's credentials, an assistant and a number on this carrier. */
  organization(f: Factories): Promise<RigOrganization>;
  /** Calls to `number` are answered by a phone running `script`. */
  setPhone(number: string, script: PhoneScript): void;
  /** The phone side of the carrier's call `callSid`, once answered. */
  phoneCall(callSid: string): PhoneCall | undefined;
  /** `from` rings the organization's number; the platform answers and the phone runs `script`. */
  ringIn(
    t: TestPlatform,
    org: RigOrganization,
    from: string,
    script: PhoneScript,
  ): Promise<{ callSid: string; phoneCall: PhoneCall }>;
}

export interface RigVoice {
  readonly id: TtsProvider;
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** The voice accepts `key` from now on. */
  addKey(key: string): void;
  /** What `tts_settings` needs besides `provider` for this voice (a project, a language…). */
  settings: Record<string, unknown>;
}

export function carrierA(sim = new CarrierASimulator()): RigCarrier & { sim: CarrierASimulator } {
  const accounts = new Map<string, string>();
  return {
    id: 'carrier_a',
    sim,
    async start() {
      return { CARRIER_A_BASE_URL: await sim.start() };
    },
    stop: () => sim.stop(),
    async organization(f) {
      const org = await f.carrierOrganization({ sim });
      accounts.set(org.number, org.account.account_sid);
      return org;
    },
    setPhone: (number, script) => sim.setPhone(number, script),
    phoneCall: (callSid) => sim.phoneCalls.get(callSid),
    async ringIn(t, org, from, script) {
      const rang = await sim.placeInboundCall({
        voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
        statusCallbackUrl: `${t.baseUrl}/webhooks/carrier_a/status`,
        accountSid: accounts.get(org.number)!,
        from,
        to: org.number,
        phone: script,
      });
      if (!rang.phoneCall)
        throw new Error(`the platform did not answer with a stream: ${JSON.stringify(rang.answer)}`);
      return { callSid: rang.callSid, phoneCall: rang.phoneCall };
    },
  };
}

export const ttsA = (sim = new TtsASimulator()) => keyedVoice('tts_a', sim);

/** A voice whose simulator takes keys with `addKey` and serves from `start()`'s base URL. */
function keyedVoice<S extends { start(): Promise<string>; stop(): Promise<void>; addKey(key: string): void }>(
  id: TtsProvider,
  sim: S,
  settings: Record<string, unknown> = {},
): RigVoice & { sim: S } {
  return {
    id,
    sim,
    async start() {
      return { [`${id.toUpperCase()}_BASE_URL`]: await sim.start() };
    },
    stop: () => sim.stop(),
    addKey: (key) => sim.addKey(key),
    settings,
  };
}

export const ttsB = (sim = new TtsBSimulator()) => keyedVoice('tts_b', sim);
export const ttsC = (sim = new TtsCSimulator()) => keyedVoice('tts_c', sim);

/** tts_d speaks for a project: the rig's assistants name one the simulator knows. */
export function ttsD(sim = new TtsDSimulator()) {
  const project = 'rig-tts-d-project';
  sim.addProject(project);
  return keyedVoice('tts_d', sim, { provider_config: { project_uuid: project } });
}
