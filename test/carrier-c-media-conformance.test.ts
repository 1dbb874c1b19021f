/**
 * carrier_c's media stream through the carrier-media conformance kit: the platform's wire
 * (`carrier-c-media.ts`) against the carrier's side its simulated phone speaks (`carrierCPhoneWire`:
 * L16 16 kHz both ways, resampled from and to the phone's μ-law 8 kHz), on calls the carrier_c
 * simulator rings in; the token and the call's uuid are headers of the NCCO's websocket endpoint that
 * come back in `websocket:connected`, and the upgrade is not signed. A hang-up only closes the socket,
 * so the stream ends `closed`. The wire's own cases are in carrier-c-media.test.ts.
 */
import { CarrierCSimulator } from '../src/sim/carrier-c.js';
import { carrierCPhoneWire, websocketOfNcco } from '../src/sim/carrier-c-phone.js';
import { LINEAR16_16K } from '../src/voice/audio.js';
import { carrierCOrganization } from './support/carrier-c-org.js';
import { runCarrierMediaConformance } from './support/carrier-media-conformance.js';

const sim = new CarrierCSimulator();
let serial = 0;

runCarrierMediaConformance({
  carrier: 'carrier_c',
  format: LINEAR16_16K,
  wire: carrierCPhoneWire,
  async start() {
    await sim.start();
    return { CARRIER_C_BASE_URL: sim.baseUrl };
  },
  stop: () => sim.stop(),
  async call(t, f) {
    const org = await carrierCOrganization(t, f, sim);
    serial += 1;
    const rang = await sim.sendInboundCall({
      answerUrl: `${t.baseUrl}/webhooks/carrier_c/voice`,
      from: `+1415666${String(1000 + serial).padStart(4, '0')}`,
      to: org.number,
      applicationId: org.applicationId,
    });
    const endpoint = websocketOfNcco(rang.answer?.body ?? '');
    if (!endpoint?.headers.token) throw new Error(`no websocket in ${rang.answer?.body}`);
    const { token, ...others } = endpoint.headers;
    return {
      callId: Number(new URL(endpoint.uri).pathname.split('/').pop()),
      url: endpoint.uri,
      token,
      callSid: rang.sid,
      connectAs: (as) => ({
        headers: {},
        ids: {
          callSid: rang.sid,
          accountSid: org.applicationId,
          streamSid: rang.sid,
          parameters: as === null ? others : { ...others, token: as },
        },
      }),
    };
  },
  malformed: '{"event":"websocket:notify"',
  hangUpEnds: 'closed',
});
