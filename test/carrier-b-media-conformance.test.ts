/**
 * carrier_b's media stream through the carrier-media conformance kit: the platform's wire
 * (`carrier-b-media.ts`) against the carrier's side its simulated phone speaks (`carrierBPhoneWire`,
 * here sending every third frame after the next, so the kit's "in order and complete" goes through
 * the reorder), on inbound calls the carrier_b simulator rings in and the platform answers with the
 * `answer` command; the token is that command's `stream_auth_token`, sent as the upgrade's
 * `x-telnyx-streaming-auth-token` header. The wire's own cases (golden messages, lost frames, PCMA,
 * every refusal reason) are in carrier-b-media.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { CARRIER_B_STREAM_TOKEN_HEADER } from '../src/providers/carriers/carrier-b-media.js';
import { CarrierBSimulator } from '../src/sim/carrier-b.js';
import { carrierBPhoneWire } from '../src/sim/carrier-b-phone-wire.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { runCarrierMediaConformance } from './support/carrier-media-conformance.js';
import { expectStatus } from './support/factories.js';

const sim = new CarrierBSimulator();
let serial = 0;

runCarrierMediaConformance({
  carrier: 'carrier_b',
  format: MULAW_8K,
  wire: carrierBPhoneWire({ playback: 'PCMU', swapEvery: 3 }),
  async start() {
    await sim.start();
    return { CARRIER_B_BASE_URL: sim.baseUrl };
  },
  stop: () => sim.stop(),
  async call(t, f) {
    serial += 1;
    const admin = await f.user();
    const account = { api_key: `KEY-K-${serial}`, connection_id: `app-k-${serial}` };
    sim.addAccount(account);
    expectStatus(
      await t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: admin.headers,
        payload: { carrier_b: { ...account, public_key: sim.publicKey } },
      }),
      200,
    );
    const assistantId = await f.assistant(admin, 'Caller');
    const number = `+1415444${String(1000 + serial).padStart(4, '0')}`;
    expectStatus(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/phone-numbers',
        headers: admin.headers,
        payload: { phone_number: number, provider: 'carrier_b', assistant_id: assistantId },
      }),
      201,
    );
    const rang = await sim.placeInboundCall({
      apiKey: account.api_key,
      webhookUrl: `${t.baseUrl}/webhooks/carrier_b/voice`,
      from: `+1415333${String(1000 + serial).padStart(4, '0')}`,
      to: number,
    });
    const answer = sim.calls.get(rang.callControlId)?.request;
    if (typeof answer?.stream_url !== 'string' || typeof answer.stream_auth_token !== 'string')
      throw new Error(`the platform did not answer with a stream: ${JSON.stringify(answer)}`);
    const url = answer.stream_url;
    return {
      callId: Number(new URL(url).pathname.split('/').pop()),
      url,
      token: answer.stream_auth_token,
      callSid: rang.callControlId,
      connectAs: (as) => ({
        headers: (as === null ? {} : { [CARRIER_B_STREAM_TOKEN_HEADER]: as }) as Record<string, string>,
        ids: {
          callSid: rang.callControlId,
          accountSid: `user-${account.connection_id}`,
          streamSid: randomUUID(),
          parameters: {},
        },
      }),
    };
  },
  malformed: '{"event":"media"',
});
