/**
 * Vendor key leases as a service: a live call takes each limited key it will use (the organization's
 * key of a provider under its `concurrency_settings`, a fallback key with a `concurrent_limit`) and
 * holds it until the call ends. Every process of a cluster counts the same table, so a limit holds
 * however the calls are spread. A lease expires `ttlMs` after it was last renewed: the process that
 * serves the call renews it every `heartbeatMs`, and a process that dies stops renewing, so its leases
 * stop counting within `ttlMs` and are swept.
 */
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import * as store from './store.js';

export type { LeaseKey } from './store.js';

export interface LeaseTimings {
  /** How long a lease counts after it was taken or last renewed. */
  ttlMs: number;
  /** How often a live call renews its leases (well under `ttlMs`, so a slow renewal never lapses one). */
  heartbeatMs: number;
  /** How often, at most, a process sweeps every organization's expired leases. */
  sweepMs: number;
}

export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { ttlMs: 60_000, heartbeatMs: 20_000, sweepMs: 60_000 };

export class VendorLeases {
  readonly timings: LeaseTimings;
  #lastSweep = 0;

  constructor(private readonly deps: { db: Db; timings?: Partial<LeaseTimings> }) {
    this.timings = { ...DEFAULT_LEASE_TIMINGS, ...deps.timings };
  }

  /** Takes `key` for the call unless `limit` other calls hold it; true when the call holds it now. */
  async acquire(tenant: Tenant, callId: number, key: store.LeaseKey, limit: number): Promise<boolean> {
    const taken = await store.acquireLease(this.deps.db, tenant, callId, key, limit, this.timings.ttlMs);
    this.#sweepNowAndThen();
    return taken;
  }

  /** Keeps the call's leases counting for another `ttlMs`; how many it holds. */
  renew(tenant: Tenant, callId: number): Promise<number> {
    return store.renewLeases(this.deps.db, tenant, callId, this.timings.ttlMs);
  }

  /** The call ended (or never started): its keys are free for other calls. */
  release(tenant: Tenant, callId: number): Promise<void> {
    return store.releaseLeases(this.deps.db, tenant, callId);
  }

  /** Calls holding a key of the organization now (expired leases do not count). */
  live(tenant: Tenant, key: Pick<store.LeaseKey, 'provider' | 'keyRef'>): Promise<number> {
    return store.countLiveLeases(this.deps.db, tenant, key);
  }

  /** Deletes every organization's expired leases; how many. */
  sweep(): Promise<number> {
    this.#lastSweep = Date.now();
    return store.sweepExpiredLeases(this.deps.db);
  }

  /**
   * Expired leases never count, so sweeping is only tidying: once per `sweepMs` at most, in the
   * background of an acquire (a key's own expired leases already go when it is acquired).
   */
  #sweepNowAndThen(): void {
    if (Date.now() - this.#lastSweep < this.timings.sweepMs) return;
    void this.sweep().catch(() => {});
  }
}
