/**
 * carrier_a's media stream through the carrier-media conformance kit: the platform's wire
 * (`carrier-a-media.ts`) against the carrier's side its simulated phone speaks (`carrierAPhoneWire`),
 * on calls the carrier_a simulator rings in, the token as a `<Parameter>` of the answer markup and
 * the upgrade signed with the account's auth token. The route's own cases (every refusal reason,
 * the order of events) are in media-stream.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { carrierASignature } from '../src/providers/carriers/carrier-a.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { streamOfMarkup } from '../src/sim/carrier-a-phone.js';
import { carrierAPhoneWire } from '../src/sim/phone-wire.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { runCarrierMediaConformance } from './support/carrier-media-conformance.js';

const sim = new CarrierASimulator();
let serial = 0;

runCarrierMediaConformance({
  carrier: 'carrier_a',
  format: MULAW_8K,
  wire: carrierAPhoneWire,
  async start() {
    await sim.start();
    return { CARRIER_A_BASE_URL: sim.baseUrl };
  },
  stop: () => sim.stop(),
  async call(t, f) {
    const org = await f.carrierOrganization({ sim });
    serial += 1;
    const rang = await sim.placeInboundCall({
      voiceUrl: `${t.baseUrl}/webhooks/carrier_a/voice`,
      accountSid: org.account.account_sid,
      from: `+1415666${String(1000 + serial).padStart(4, '0')}`,
      to: org.number,
    });
    const stream = streamOfMarkup(rang.answer!.body);
    if (!stream?.parameters.token) throw new Error(`no stream in ${rang.answer?.body}`);
    const token = stream.parameters.token;
    return {
      callId: Number(new URL(stream.url).pathname.split('/').pop()),
      url: stream.url,
      token,
      callSid: rang.callSid,
      connectAs: (as) => ({
        headers: { 'x-twilio-signature': carrierASignature(org.account.auth_token, stream.url, {}) },
        ids: {
          callSid: rang.callSid,
          accountSid: org.account.account_sid,
          streamSid: `MZ${randomBytes(16).toString('hex')}`,
          parameters: as === null ? {} : ({ token: as } as Record<string, string>),
        },
      }),
    };
  },
  malformed: '{"event":"media"',
});
