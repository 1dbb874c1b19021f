/**
 * An inbound INVITE, from the door to the conversation: admitted by `admitInvite` (or challenged, or
 * refused alike with 403), given RTP ports and an SDP answer, recorded as the number's inbound call,
 * rung (180) and answered (200, re-sent until the ACK); the call talks once the ACK comes. A caller
 * who gives up (CANCEL) while the call is being recorded finds its record `canceled`, and no ports
 * are kept for a call that is not answered.
 */
import type { Tenant } from '../../db/tenant.js';
import { header } from '../../sip/headers.js';
import { answerOffer } from '../../sip/sdp.js';
import { parseUri } from '../../sip/uri.js';
import type { IncomingCall } from '../../sip/user-agent.js';
import { ALAW_8K, MULAW_8K } from '../audio.js';
import type { CallPorts } from './call-ports.js';
import { admitInvite, type InboundDeps } from './inbound.js';
import type { SipMetrics } from './metrics.js';
import { referAndWait } from './transfer.js';
import type { SipCallOptions, TrunkCall } from './trunk-call.js';
import type { SipCallRecords, SipLog, SipRuntime } from './types.js';

/** A call for the agent to keep: who it is, and where its media may come from. */
export type TrackedCall = Pick<
  SipCallOptions,
  'tenant' | 'callId' | 'callSid' | 'direction' | 'ports' | 'number' | 'mediaSources'
>;

export interface InboundCallContext {
  admission: InboundDeps;
  ports: CallPorts;
  calls: SipCallRecords;
  runtime: SipRuntime;
  tenantOf(organizationId: number): Tenant;
  metrics?: SipMetrics;
  log: SipLog;
  /** Makes the agent's `TrunkCall` for an admitted call. */
  track(call: TrackedCall): TrunkCall;
}

export async function answerInbound(incoming: IncomingCall, context: InboundCallContext): Promise<void> {
  const { log, metrics, ports: portRange, calls } = context;
  const requestUri = incoming.request.uri;
  const authorization = header(incoming.request, 'Authorization');
  const admission = await admitInvite(
    {
      dialled: userOf(requestUri) ?? userOf(incoming.to) ?? '',
      source: incoming.source,
      requestUri,
      ...(authorization ? { authorization } : {}),
    },
    context.admission,
  ).catch((error: unknown) => {
    log.warn({ err: error }, 'SIP admission failed');
    return undefined;
  });
  if (!admission) return incoming.reject(500);
  if (admission.kind === 'challenge')
    return incoming.reject(401, [{ name: 'WWW-Authenticate', value: admission.header }]);
  if (admission.kind === 'refuse') {
    metrics?.refused(admission.why);
    log.warn({ source: incoming.source, why: admission.why }, 'SIP INVITE refused');
    return incoming.reject(admission.status);
  }
  const ports = await portRange.allocate().catch(() => undefined);
  if (!ports) return incoming.reject(503);
  const answer = answerOffer(incoming.sdp, portRange.localSdp(ports));
  if (!answer.ok) {
    await portRange.release(ports);
    return incoming.reject(answer.refusal.status);
  }
  const { number } = admission;
  const tenant = context.tenantOf(number.organizationId);
  const record = await calls
    .startInbound(tenant, number, {
      kind: 'inbound_call',
      callSid: incoming.callId,
      from: userOf(incoming.from) ?? incoming.from,
      to: number.phoneNumber,
    })
    .catch((error: unknown) => {
      log.warn({ err: error }, 'recording an inbound SIP call failed');
      return undefined;
    });
  if (!record || incoming.phase !== 'pending') {
    await portRange.release(ports);
    // The caller gave up (CANCEL) while the call was being recorded: its record ends too.
    if (record)
      await calls
        .applyStatus(tenant.organizationId, record.id, {
          kind: 'call_status',
          callSid: incoming.callId,
          status: 'canceled',
          durationSeconds: 0,
        })
        .catch(() => undefined);
    return incoming.reject(480);
  }
  incoming.ringing();
  const call = context.track({
    tenant,
    callId: record.id,
    callSid: incoming.callId,
    direction: 'inbound',
    ports,
    number: number.phoneNumber,
    mediaSources: [incoming.source.host],
  });
  call.leg = {
    hangUp: () => void incoming.bye().catch(() => undefined),
    refer: (target) => referAndWait(incoming, target),
  };
  context.runtime.prepare?.(tenant, record.id, answer.media.codec === 'PCMA' ? ALAW_8K : MULAW_8K);
  incoming.onConfirmed = () => call.answered(answer.media);
  incoming.onCancelled = () => call.failed({ status: 487, reason: 'Request Terminated' });
  incoming.onEnded = (end) => call.ended(end.by);
  incoming.accept(answer.sdp);
}

/** The user part of a SIP URI (`sip:+14155550100@host` → `+14155550100`). */
export function userOf(uri: string): string | undefined {
  try {
    return parseUri(uri).user ?? undefined;
  } catch {
    return undefined;
  }
}
