/**
 * What the calls pages share: the call's type as the API gives it, the statuses a call can be in,
 * and how a call's parts read in words (direction, duration, cost, the two numbers).
 */
import type { components } from '../../../../clients/typescript/src/index.js';

export type Call = components['schemas']['Call'];
export type CallStatus = Call['status'];
export type CallTurn = components['schemas']['CallTurn'];

/** Every status the API knows, in the order a call goes through them. */
export const CALL_STATUSES: CallStatus[] = [
  'queued',
  'ringing',
  'in-progress',
  'completed',
  'busy',
  'no-answer',
  'failed',
  'canceled',
];

/** Statuses a call can still leave: it is under way (and can be hung up, not deleted). */
const LIVE = new Set<string>(['queued', 'ringing', 'in-progress']);
export const isLive = (call: Call): boolean => LIVE.has(call.status);

export const directionLabel = (call: Call): string => (call.direction === 'inbound' ? 'Inbound' : 'Outbound');

/** "2 min 05 s", "45 s", or a dash when the call has no duration (yet). */
export function duration(seconds: number | null | undefined): string {
  if (typeof seconds !== 'number') return '—';
  const minutes = Math.floor(seconds / 60);
  const rest = seconds % 60;
  return minutes > 0 ? `${minutes} min ${String(rest).padStart(2, '0')} s` : `${rest} s`;
}

/** The API keeps costs in dollars with no currency field; four decimals show per-second prices. */
export const cost = (value: number | null | undefined): string =>
  typeof value === 'number' ? `$${value.toFixed(4)}` : '—';

/** "from → to", the caller first on inbound calls as on outbound ones (the API orders them so). */
export const numbers = (call: Call): string => `${call.from_phone_number} → ${call.to_phone_number}`;

/**
 * Why the call ended, as far as the API says: it has no field for it, so this reads what `call_meta`
 * keeps of a failure (the carrier's `error`, a SIP trunk's `sip_status`), else the status itself.
 */
export function endedReason(call: Call): string {
  const meta = call.call_meta as { error?: unknown; sip_status?: unknown };
  if (typeof meta.error === 'string' && meta.error) return meta.error;
  if (meta.sip_status !== undefined) return `SIP ${String(meta.sip_status)}`;
  return isLive(call) ? '—' : call.status;
}

/** `human` or `machine` when machine detection ran (docs/calls.md, call_meta.answered_by). */
export function answeredBy(call: Call): string {
  const by = (call.call_meta as { answered_by?: unknown }).answered_by;
  return typeof by === 'string' ? by : '—';
}
