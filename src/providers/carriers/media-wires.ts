/**
 * The carriers' media stream wire formats, one per carrier whose streams the platform serves. The
 * media route asks here how a call's carrier speaks; a carrier missing here has no stream to serve
 * yet, and a stream for one of its calls is refused.
 */
import type { CarrierId } from '../ids.js';
import { carrierAMedia } from './carrier-a-media.js';
import { carrierBMedia } from './carrier-b-media.js';
import { carrierCMedia } from './carrier-c-media.js';
import type { CarrierMediaWire } from './media.js';

export type MediaWires = Partial<Record<CarrierId, CarrierMediaWire>>;

export const mediaWires: MediaWires = {
  carrier_a: carrierAMedia,
  carrier_b: carrierBMedia,
  carrier_c: carrierCMedia,
};
