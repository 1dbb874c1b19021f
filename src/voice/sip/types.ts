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

/** What the agent records of its calls, through the calls domain (`CallService`). */
export interface SipCallRecords {
  applyStatus(organizationId: number, callId: number, event: CallStatusEvent): Promise<unknown>;
  startInbound(
    tenant: Tenant,
    number: { id: number; assistantId: number | null; provider: string; phoneNumber: string },
    event: { kind: 'inbound_call'; callSid: string; from: string; to: string },
  ): Promise<{ id: number } | undefined>;
}

export interface SipLog {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}
