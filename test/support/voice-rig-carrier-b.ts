/**
 * carrier_b's entry for the voice rig (voice-rig-vendors.ts describes the `RigCarrier` contract): the
 * carrier_b simulator, an organization with carrier_b credentials (its webhook key too) and a number
 * on carrier_b, phones speaking carrier_b's media stream — by default sending every third frame after
 * the next, so every call through the rig goes through the platform's reorder — and inbound calls
 * the platform answers with the `answer` command. Kept beside the other entries until the lead
 * folds it into voice-rig-vendors.ts.
 */
import { CarrierBSimulator } from '../../src/sim/carrier-b.js';
import type { CarrierBPhoneSettings } from '../../src/sim/carrier-b-phone.js';
import { expectStatus } from './factories.js';
import type { RigCarrier } from './voice-rig-vendors.js';

let serial = 0;

export function carrierB(
  sim = new CarrierBSimulator(),
  phoneSettings: CarrierBPhoneSettings = { swapEvery: 3 },
): RigCarrier & { sim: CarrierBSimulator } {
  const apiKeys = new Map<string, string>();
  return {
    id: 'carrier_b',
    sim,
    async start() {
      return { CARRIER_B_BASE_URL: await sim.start() };
    },
    stop: () => sim.stop(),
    async organization(f) {
      const mine = ++serial;
      const admin = await f.user();
      const account = { api_key: `KEY-RIG-B-${mine}`, connection_id: `rig-app-b-${mine}` };
      sim.addAccount(account);
      expectStatus(
        await f.t.app.inject({
          method: 'PUT',
          url: '/api/v1/organization',
          headers: admin.headers,
          payload: { carrier_b: { ...account, public_key: sim.publicKey } },
        }),
        200,
      );
      const assistantId = await f.assistant(admin, 'Caller');
      const number = `+1415222${String(1000 + mine).padStart(4, '0')}`;
      expectStatus(
        await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/phone-numbers',
          headers: admin.headers,
          payload: { phone_number: number, provider: 'carrier_b', assistant_id: assistantId },
        }),
        201,
      );
      apiKeys.set(number, account.api_key);
      return { admin, assistantId, number };
    },
    setPhone: (number, script) => sim.setPhone(number, script, phoneSettings),
    phoneCall: (callSid) => sim.phoneCalls.get(callSid),
    async ringIn(t, org, from, script) {
      const rang = await sim.placeInboundCall({
        apiKey: apiKeys.get(org.number)!,
        webhookUrl: `${t.baseUrl}/webhooks/carrier_b/voice`,
        from,
        to: org.number,
        phone: script,
        phoneSettings,
      });
      if (!rang.phoneCall)
        throw new Error(`the platform did not answer with a stream (webhook answered ${rang.status})`);
      return { callSid: rang.callControlId, phoneCall: rang.phoneCall };
    },
  };
}
