/** The telephony adapters, one per provider id, the carriers' at the base URLs the configuration gives. */
import type { ProviderUrls } from '../../config.js';
import { CarrierAAdapter } from './carrier-a.js';
import { CarrierBAdapter } from './carrier-b.js';
import { CarrierCAdapter } from './carrier-c.js';
import { SipTrunkAdapter } from './sip-trunk.js';
import type { CarrierAdapter, CarrierId } from './types.js';

/** Every telephony provider's adapter: the carriers', and the SIP trunk's (bound to the SIP agent). */
export type Carriers = Record<CarrierId, CarrierAdapter> & { sip_trunk: SipTrunkAdapter };

export function createCarriers(urls: Pick<ProviderUrls, 'carrierA' | 'carrierB' | 'carrierC'>): Carriers {
  return {
    carrier_a: new CarrierAAdapter({ baseUrl: urls.carrierA }),
    carrier_b: new CarrierBAdapter({ baseUrl: urls.carrierB }),
    carrier_c: new CarrierCAdapter({ baseUrl: urls.carrierC }),
    sip_trunk: new SipTrunkAdapter(),
  };
}

/** Services ask the adapters' module whether a provider is a carrier; the list lives in `ids.ts`. */
export { isCarrierId, isTelephonyProvider } from '../ids.js';
