/**
 * The SIP trunk's line in the readiness report (`configuration-status`): whether this process runs
 * the SIP agent, and the trunk as the agent's upkeep last checked it (OPTIONS ping, registration).
 * Kept apart from the service so the report's wording of the agent's health lives in one place.
 */
import type { SipTrunkAdapter } from '../../providers/carriers/sip-trunk.js';

export interface SipTrunkStatus {
  agent: 'running' | 'off';
  reachable: boolean | null;
  last_status: number | null;
  rtt_ms: number | null;
  checked_at: string | null;
  registration: 'registered' | 'registering' | 'failed' | 'off';
  /** The last failed REGISTER's status, while `registration` is `failed`. */
  registration_status: number | null;
  /** Why the trunk could not be checked (its host does not resolve). */
  detail: string | null;
}

/** `config` is the organization's `sip_trunk_config` (for `register` before the first check). */
export function sipTrunkStatus(
  adapter: Pick<SipTrunkAdapter, 'running' | 'health'>,
  organizationId: number,
  config: Record<string, unknown>,
): SipTrunkStatus {
  const health = adapter.running ? adapter.health(organizationId) : undefined;
  if (!health)
    return {
      agent: adapter.running ? 'running' : 'off',
      reachable: null,
      last_status: null,
      rtt_ms: null,
      checked_at: null,
      // Saved a moment ago: the agent's next round registers it.
      registration: adapter.running && config.register === true ? 'registering' : 'off',
      registration_status: null,
      detail: null,
    };
  return {
    agent: 'running',
    reachable: health.reachable,
    last_status: health.status,
    rtt_ms: health.rttMs,
    checked_at: health.checkedAt?.toISOString() ?? null,
    registration: health.registration,
    registration_status: health.registrationStatus,
    detail: health.detail,
  };
}
