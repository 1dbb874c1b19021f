/** The carrier adapters, one per provider id, at the base URLs the configuration gives. */
import type { ProviderUrls } from '../../config.js';
import { CarrierAAdapter } from './carrier-a.js';
import { CarrierBAdapter } from './carrier-b.js';
import { CarrierCAdapter } from './carrier-c.js';
import type { CarrierAdapter, CarrierId } from './types.js';

export type Carriers = Record<CarrierId, CarrierAdapter>;

export function createCarriers(urls: Pick<ProviderUrls, 'carrierA' | 'carrierB' | 'carrierC'>): Carriers {
  return {
    carrier_a: new CarrierAAdapter({ baseUrl: urls.carrierA }),
    carrier_b: new CarrierBAdapter({ baseUrl: urls.carrierB }),
    carrier_c: new CarrierCAdapter({ baseUrl: urls.carrierC }),
  };
}

/** Services ask the adapters' module whether a provider is a carrier; the list lives in `ids.ts`. */
export { isCarrierId } from '../ids.js';
