/**
 * carrier_c's entry for the voice rig (voice-rig-vendors.ts describes the `RigCarrier` contract): the
 * carrier_c simulator, an organization with a carrier_c application and a number on carrier_c
 * (carrier-c-org.ts), phones speaking carrier_c's WebSocket audio (16-bit PCM at 16 kHz), and inbound
 * calls rung through the application's answer webhook.
 */
import { CarrierCSimulator } from '../../src/sim/carrier-c.js';
import { carrierCOrganization } from './carrier-c-org.js';
import type { RigCarrier } from './voice-rig-vendors.js';

export function carrierC(sim = new CarrierCSimulator()): RigCarrier & { sim: CarrierCSimulator } {
  const applications = new Map<string, string>();
  return {
    id: 'carrier_c',
    sim,
    async start() {
      return { CARRIER_C_BASE_URL: await sim.start() };
    },
    stop: () => sim.stop(),
    async organization(f) {
      const org = await carrierCOrganization(f.t, f, sim);
      applications.set(org.number, org.applicationId);
      return org;
    },
    setPhone: (number, script) => sim.setPhone(number, script),
    phoneCall: (callSid) => sim.phoneCalls.get(callSid),
    async ringIn(t, org, from, script) {
      const rang = await sim.sendInboundCall({
        answerUrl: `${t.baseUrl}/webhooks/carrier_c/voice`,
        eventUrl: `${t.baseUrl}/webhooks/carrier_c/status`,
        from,
        to: org.number,
        applicationId: applications.get(org.number)!,
        phone: script,
      });
      if (!rang.phoneCall)
        throw new Error(`the platform did not answer with a stream: ${JSON.stringify(rang.answer)}`);
      return { callSid: rang.sid, phoneCall: rang.phoneCall };
    },
  };
}
