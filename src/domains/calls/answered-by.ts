/**
 * Who answered an outbound call — a person or an answering machine — as the call record keeps it
 * (`call_meta.answered_by`, which makes a campaign attempt's outcome `voicemail`). The carrier's
 * detection tells it (its asynchronous verdict, a status callback's `AnsweredBy`), and so does the
 * live session's own detection (voice/voicemail.ts) once it acts on a machine: then the record also
 * holds `call_meta.voicemail` (how it was detected), and a later verdict no longer changes it, so the
 * record agrees with what the call did (a message left is a voicemail, whatever the carrier thinks).
 */
import type { Db, Executor } from '../../db/client.js';
import { FINAL_CALL_STATUSES } from '../../db/schema/telephony.js';
import { Tenant } from '../../db/tenant.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import { findAssistant } from '../assistants/reads.js';
import type { AssistantSettings } from '../assistants/schemas.js';
import * as store from './store.js';

export type MachineDetection = Extract<CarrierEvent, { kind: 'machine_detection' }>;

/**
 * Told, once it is recorded, when the carrier's asynchronous answering-machine detection reports on
 * a call (carrier-webhooks): the live session (voice/voicemail.ts) acts on it. In-process: it reaches
 * only the sessions this process holds.
 */
export type MachineDetectionListener = (
  tenant: Tenant,
  callId: number,
  verdict: ReturnType<typeof verdictOf>,
) => void;

export type AnsweredBy = 'human' | 'machine';

/** How the session knew it was a machine: the carrier's verdict, the first words, the greeting's length, a beep. */
export type MachineSource = 'carrier' | 'words' | 'audio' | 'beep';

/** The call's meta with `answered_by` set, or undefined when it stays as it is. */
export function withAnsweredBy(
  callMeta: Record<string, unknown>,
  answeredBy: AnsweredBy,
): Record<string, unknown> | undefined {
  if (callMeta.voicemail !== undefined || callMeta.answered_by === answeredBy) return undefined;
  return { ...callMeta, answered_by: answeredBy };
}

/** What a status callback's `AnsweredBy` changes in the call's record (nothing, once the session acted). */
export function answeredByChange(
  callMeta: Record<string, unknown>,
  answeredBy: AnsweredBy | undefined,
): { callMeta?: Record<string, unknown> } {
  const changed = answeredBy && withAnsweredBy(callMeta, answeredBy);
  return changed ? { callMeta: changed } : {};
}

/**
 * Records who answered, the call's row locked (status callbacks write the same meta). A call already
 * final keeps its record: its outcome was taken from it. `voicemail`: the session acted on a machine.
 * True when the record changed.
 */
export async function recordAnsweredBy(
  tx: Executor,
  tenant: Tenant,
  callId: number,
  answeredBy: AnsweredBy,
  voicemail?: { source: MachineSource },
): Promise<boolean> {
  const call = await store.findCall(tx, tenant, callId, { forUpdate: true });
  if (!call || FINAL_CALL_STATUSES.includes(call.status)) return false;
  if (voicemail) {
    if (call.callMeta.voicemail !== undefined) return false;
    await store.updateCall(tx, tenant, callId, {
      callMeta: { ...call.callMeta, answered_by: 'machine', voicemail },
    });
    return true;
  }
  const callMeta = withAnsweredBy(call.callMeta, answeredBy);
  if (callMeta) await store.updateCall(tx, tenant, callId, { callMeta });
  return callMeta !== undefined;
}

/** The carrier's verdict, recorded: who answered (unless the session already acted) and the event. */
export async function recordMachineDetection(
  tx: Executor,
  tenant: Tenant,
  callId: number,
  event: MachineDetection,
): Promise<void> {
  if (event.answeredBy) await recordAnsweredBy(tx, tenant, callId, event.answeredBy);
  await store.insertCallEvent(tx, tenant, callId, 'call.machine_detection', detectionEventData(event));
}

/**
 * The carrier's verdict on a call as its webhook found it (`seen`): a verdict naming nobody is only an
 * event; one that changes the record is written with its event by one statement while the call is
 * still as seen — else, as always, in a transaction with the row locked.
 */
export async function recordMachineDetectionOn(
  db: Db,
  seen: store.CallRow,
  event: MachineDetection,
): Promise<void> {
  const tenant = new Tenant(seen.organizationId);
  const detected = { type: 'call.machine_detection', data: detectionEventData(event) };
  if (!event.answeredBy) return store.insertCallEvent(db, tenant, seen.id, detected.type, detected.data);
  const callMeta = FINAL_CALL_STATUSES.includes(seen.status)
    ? undefined
    : withAnsweredBy(seen.callMeta, event.answeredBy);
  const options = { noWebhookUrl: false };
  if (callMeta && (await store.moveCallIfUnchanged(db, tenant, seen, { callMeta }, detected, options)))
    return;
  await db.transaction((tx) => recordMachineDetection(tx, tenant, seen.id, event));
}

function detectionEventData(event: MachineDetection): Record<string, unknown> {
  return {
    call_sid: event.callSid,
    ...(event.answeredBy ? { answered_by: event.answeredBy } : {}),
    ...(event.greetingEnded ? { greeting_ended: event.greetingEnded } : {}),
  };
}

/** What the live session is told of a verdict. */
export function verdictOf(event: MachineDetection): {
  answeredBy?: AnsweredBy;
  greetingEnded?: 'beep' | 'other';
} {
  return {
    ...(event.answeredBy ? { answeredBy: event.answeredBy } : {}),
    ...(event.greetingEnded ? { greetingEnded: event.greetingEnded } : {}),
  };
}

/**
 * Whether the carrier is asked to detect answering machines on an outbound call: its assistant's
 * `voicemail_settings.detection`, on by default.
 */
export async function detectsVoicemail(
  ex: Executor,
  tenant: Tenant,
  call: Pick<store.CallRow, 'direction' | 'assistantId'>,
): Promise<boolean> {
  if (call.direction !== 'outbound' || call.assistantId === null) return false;
  const assistant = await findAssistant(ex, tenant, call.assistantId);
  return assistant !== undefined && detectsVoicemailFor(assistant.config);
}

/** Whether an assistant of this stored configuration has its outbound calls' answering machines detected. */
export function detectsVoicemailFor(config: Record<string, unknown>): boolean {
  return (config as AssistantSettings).voicemail_settings?.detection ?? true;
}
