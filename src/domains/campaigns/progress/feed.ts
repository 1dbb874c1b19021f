/**
 * Live campaign progress for WebSockets. Whoever changes a campaign's progress announces it with
 * `announceProgress` (events.ts) inside its transaction; this feed LISTENs on that channel once per
 * process through `Database.listen` — a real LISTEN connection on a server database, and PGlite's
 * own listener on the embedded one, which also hears a NOTIFY only once its transaction commits (so
 * no separate in-process channel is needed; the tests prove both).
 *
 * A running campaign may announce hundreds of changes a second, and many sockets may watch it, so
 * the feed coalesces: per campaign, at most one progress computation per `intervalMs` (default
 * 250 ms), its result handed to every subscriber of that campaign. The first notification after a
 * quiet spell is computed at once; those that arrive while a computation is due or running are
 * folded into the next one. Campaigns nobody watches cost nothing but a map lookup.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../../db/client.js';
import { Tenant } from '../../../db/tenant.js';
import { PROGRESS_CHANNEL } from '../events.js';
import type { ProgressView } from './views.js';

/** Called with each new progress; with undefined when the campaign is gone (deleted). */
export type ProgressListener = (progress: ProgressView | undefined) => void;

export interface ProgressFeedDeps {
  database: Database;
  compute(tenant: Tenant, campaignId: number): Promise<ProgressView | undefined>;
  log: FastifyBaseLogger;
  /** The shortest time between two computations of one campaign's progress. */
  intervalMs?: number;
}

interface Watch {
  organizationId: number;
  campaignId: number;
  listeners: Set<ProgressListener>;
  timer: NodeJS.Timeout | undefined;
  running: boolean;
  /** A change arrived while computing: compute again when done. */
  dirty: boolean;
  lastStartedAt: number;
}

export class CampaignProgressFeed {
  readonly #watches = new Map<string, Watch>();
  readonly #running = new Set<Promise<void>>();
  readonly #intervalMs: number;
  #started = false;
  #stopped = false;
  /** Computations made since start: tests and metrics read it. */
  computations = 0;

  constructor(private readonly deps: ProgressFeedDeps) {
    this.#intervalMs = deps.intervalMs ?? 250;
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.deps.database.listen(PROGRESS_CHANNEL, (payload) => this.#notified(payload));
  }

  /** Watches a campaign; the returned function stops watching. */
  subscribe(organizationId: number, campaignId: number, listener: ProgressListener): () => void {
    const key = `${organizationId}:${campaignId}`;
    let watch = this.#watches.get(key);
    if (!watch) {
      watch = {
        organizationId,
        campaignId,
        listeners: new Set(),
        timer: undefined,
        running: false,
        dirty: false,
        lastStartedAt: Number.NEGATIVE_INFINITY,
      };
      this.#watches.set(key, watch);
    }
    watch.listeners.add(listener);
    return () => {
      const current = this.#watches.get(key);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size === 0) {
        clearTimeout(current.timer);
        this.#watches.delete(key);
      }
    };
  }

  /** Asks for a fresh computation of a watched campaign (a client's `request_update`), coalesced as a change is. */
  refresh(organizationId: number, campaignId: number): void {
    const watch = this.#watches.get(`${organizationId}:${campaignId}`);
    if (watch) this.#schedule(watch);
  }

  /** Stops hearing notifications, forgets every subscriber, and waits for computations under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const watch of this.#watches.values()) clearTimeout(watch.timer);
    this.#watches.clear();
    await Promise.allSettled([...this.#running]);
  }

  #notified(payload: string): void {
    // `Database.listen` has no unlisten: after stop the handler stays but does nothing.
    if (this.#stopped) return;
    const watch = this.#watches.get(payload);
    if (watch) this.#schedule(watch);
  }

  #schedule(watch: Watch): void {
    if (this.#stopped) return;
    if (watch.running) {
      watch.dirty = true;
      return;
    }
    if (watch.timer) return; // already due: this change will be in it
    const wait = Math.max(0, watch.lastStartedAt + this.#intervalMs - Date.now());
    watch.timer = setTimeout(() => {
      watch.timer = undefined;
      this.#track(this.#compute(watch));
    }, wait);
  }

  #track(work: Promise<void>): void {
    this.#running.add(work);
    void work.finally(() => this.#running.delete(work));
  }

  async #compute(watch: Watch): Promise<void> {
    watch.running = true;
    watch.lastStartedAt = Date.now();
    this.computations += 1;
    try {
      const progress = await this.deps.compute(new Tenant(watch.organizationId), watch.campaignId);
      if (this.#stopped) return;
      for (const listener of [...watch.listeners]) {
        try {
          listener(progress);
        } catch (error) {
          this.deps.log.warn({ err: error, campaign_id: watch.campaignId }, 'progress listener failed');
        }
      }
    } catch (error) {
      // The next change tries again; a failure here must not stop the feed.
      this.deps.log.warn(
        { err: error, campaign_id: watch.campaignId },
        'campaign progress computation failed',
      );
    } finally {
      watch.running = false;
      if (watch.dirty && this.#watches.get(`${watch.organizationId}:${watch.campaignId}`) === watch) {
        watch.dirty = false;
        this.#schedule(watch);
      }
    }
  }
}
