/**
 * How outgoing webhooks describe a call and the segments of its transcript: the `data` of
 * `call.*` events (docs/webhooks.md).
 */
import type * as store from './store.js';
import type { TranscriptSegmentRow } from './transcripts.js';

/** A call as outgoing webhooks describe it. */
export function callEventData(call: store.CallRow): Record<string, unknown> {
  return {
    call_id: call.id,
    call_sid: call.callSid,
    assistant_id: call.assistantId,
    direction: call.direction,
    status: call.status,
    from_phone_number: call.fromPhoneNumber,
    to_phone_number: call.toPhoneNumber,
    customer_phone_number: call.customerPhoneNumber,
    duration: call.duration,
    cost: call.cost,
    started_at: call.startedAt?.toISOString() ?? null,
    ended_at: call.endedAt?.toISOString() ?? null,
  };
}

/** A transcript segment as the end-of-call webhook carries it. */
export function transcriptEventSegment(segment: TranscriptSegmentRow): Record<string, unknown> {
  return {
    speaker: segment.speaker,
    text: segment.text,
    started_at: segment.startedAt.toISOString(),
    ended_at: segment.endedAt.toISOString(),
  };
}
