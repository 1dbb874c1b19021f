/**
 * Which SIP agent holds a call. A trunk call lives in the process whose agent holds its dialog, so
 * each record names that agent (`call_meta.sip_agent`): its address, `publicHost:port` (the bound
 * UDP port), the same in each life of a process configured alike. Everything the agent reports about
 * a call carries it; a call the agent holds can be looked up (`snapshotOf`); and an agent starting
 * settles the calls recorded as its own that it does not hold (`calls/sip-orphans.ts`).
 */
import type { CallStatus } from '../../db/schema/telephony.js';
import type { CallService } from '../../domains/calls/service.js';
import type { CallSnapshot } from '../../providers/carriers/types.js';
import type { TrunkCall } from './trunk-call.js';

/** The agent's identity as call records name it. */
export function agentAddress(publicHost: string, port: number): string {
  return `${publicHost}:${port}`;
}

/**
 * The calls domain as the agent reports to it, each status and inbound call naming the agent
 * (`address()`: undefined until it listens, when it has no calls yet).
 */
export function reportingAs(
  calls: Pick<CallService, 'applyStatus' | 'startInbound'>,
  address: () => string | undefined,
): Pick<CallService, 'applyStatus' | 'startInbound'> {
  const stamp = <T extends object>(event: T): T => {
    const sipAgent = address();
    return sipAgent ? { ...event, sipAgent } : event;
  };
  return {
    applyStatus: (organizationId, callId, event) => calls.applyStatus(organizationId, callId, stamp(event)),
    startInbound: (tenant, number, event) => calls.startInbound(tenant, number, stamp(event)),
  };
}

/** A call the agent holds, as a carrier's records would show it; undefined once it has ended. */
export function snapshotOf(call: TrunkCall | undefined): CallSnapshot | undefined {
  if (!call || call.state === 'ended') return undefined;
  const status: CallStatus =
    call.state === 'answered'
      ? 'in-progress'
      : call.state === 'ringing' || call.options.direction === 'inbound'
        ? 'ringing'
        : 'queued';
  return { callSid: call.options.callSid, status, createdAt: call.createdAt };
}
