/** The words the SIP agent's modules share with the rest of the platform. */
import type { Tenant } from '../../db/tenant.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import type { AudioFormat } from '../audio.js';
import type { CallRuntime } from '../transport.js';

export type { MediaHandlers } from '../transport.js';

/** A status the agent reports for a call, as a carrier's status callback would. */
export type CallStatusEvent = Extract<CarrierEvent, { kind: 'call_status' }>;

/** The runtime the agent hands answered calls to; `prepare` starts the greeting early. */
export interface SipRuntime extends CallRuntime {
  prepare?(tenant: Tenant, callId: number, format: AudioFormat): void;
}
