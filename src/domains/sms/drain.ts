/**
 * The SMS drain of one number: the `sms.drain` job, and the runs the process that claimed times
 * itself after it.
 *
 * A run is one statement (drain-store.ts `claimDue`): under the number's row lock it takes the
 * number's oldest queued messages whose slots fall within the next HORIZON_SECONDS — a slot every
 * GAP_FACTOR / rate (+ 1 ms) seconds from the number's turn, which the statement moves past them —
 * sets them `sending`, and, when messages remain, writes the number's wake-up job. The run then
 * ends, and this process hands each message to the carrier at its slot through the number's lane
 * (send-lanes.ts: in the queue's order, never closer than 1 / rate), records the batch's answers
 * together (hand-over.ts), and runs the number's next claim itself LEAD_SECONDS before this batch's
 * turns run out; the wake-up job, due FALLBACK_SECONDS after that, is for another process to go on
 * should this one be gone. So:
 *
 * - the rate holds across restarts and processes: slots come from the turn on the number's row,
 *   handed out under its lock; a send never starts before its slot;
 * - per-number FIFO: a claim takes the oldest first, slots follow that order, and a lane keeps it;
 * - one send per queued message: the claim moves each from `queued` to `sending` exactly once;
 * - a message found `sending` after a crash is not resent: it was claimed; the number's next claim
 *   fails it as interrupted once INTERRUPTED_AFTER_SECONDS have passed (settlement.ts);
 * - cancelled messages are skipped: only `queued` ones are claimed;
 * - a retryable carrier failure puts the message back in the queue, claimable again after a back-off
 *   (RETRY_BASE_SECONDS, doubled per attempt) until MAX_ATTEMPTS;
 * - the number removed: its queued messages fail when its drain next runs;
 * - numbers do not hold each other back: each has its own runs, and a run holds a worker for one
 *   statement, not for the carrier.
 */
import type { Db } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import type { JobLogger, JobQueue } from '../../queue/queue.js';
import { findPhoneNumber } from '../phone-numbers/reads.js';
import { defaultSmsRate } from '../phone-numbers/service.js';
import { takeSmsTurn } from '../phone-numbers/sms-turns.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { configVersion, type Versioned, VersionedCache } from '../runtime/versioned-cache.js';
import {
  type Claim,
  type ClaimedMessage,
  type ClaimRules,
  claimDue,
  failOrphaned,
  wakeEveryQueueOnPlatform,
} from './drain-store.js';
import type { CarrierAnswer, HandOver } from './hand-over.js';
import { SendLanes } from './send-lanes.js';
import { INTERRUPTED_AFTER_SECONDS, INTERRUPTED_ERROR, type Settlement } from './settlement.js';

/**
 * How far ahead a run claims: long enough that a run's statement is shared by several messages at
 * fast rates, short enough that a message waits little in `sending` — a crash in that moment leaves
 * it failed as interrupted, never resent.
 */
const HORIZON_SECONDS = 0.25;
/**
 * The next run is due this long before the batch's last slot has passed, so that it has claimed the
 * following slots by the time they come: the number never idles between runs.
 */
const LEAD_SECONDS = 0.1;
/**
 * The process that claimed runs the number's next claim itself, on a timer: one statement, no job
 * to fetch and complete, and no wait behind other work in the queue. The wake-up job written with
 * each claim is due this much later, for another process to go on should this one be gone.
 */
const FALLBACK_SECONDS = 1;
/**
 * Slots are a little further apart than the rate — 2 % and 1 ms — so that the way to the carrier
 * (its own jitter, a busy process) rarely brings two arrivals closer than the rate allows. The old
 * per-message send used 2 % and 5 ms, which capped a 50/s number at 39/s.
 */
const GAP_FACTOR = 1.02;
const GAP_EXTRA_SECONDS = 0.001;
/** A run claims at most this many (a rate of 800/s over the horizon). */
const MAX_BATCH = 200;
/** A number whose due messages another transaction holds (being cancelled) is looked at again after this. */
const MIN_RERUN_SECONDS = 0.02;
/** A message back in the queue after a retryable failure waits 10 s, then 20, 40, 80, 160. */
export const RETRY_BASE_SECONDS = 10;
/** Attempts a message gets; the last retryable failure fails it with the carrier's words. */
export const MAX_ATTEMPTS = 6;
/** Runs that find the organization's configuration changed under them, before the job fails. */
const MAX_STALE_ATTEMPTS = 5;

/** Numbers whose last turn this process remembers; past it they are forgotten (and seen as shared). */
const MAX_KEPT_TURNS = 20_000;
export const NUMBER_REMOVED_ERROR = 'The sending number was removed';

/** The rules every claim runs by (besides the version and the number's default rate). */
export const CLAIM_RULES: Omit<ClaimRules, 'version' | 'defaultRate' | 'notBeforeSeconds'> = {
  gapFactor: GAP_FACTOR,
  gapExtraSeconds: GAP_EXTRA_SECONDS,
  horizonSeconds: HORIZON_SECONDS,
  leadSeconds: LEAD_SECONDS,
  fallbackSeconds: FALLBACK_SECONDS,
  minRerunSeconds: MIN_RERUN_SECONDS,
  maxBatch: MAX_BATCH,
  retryBaseSeconds: RETRY_BASE_SECONDS,
  interruptedAfterSeconds: INTERRUPTED_AFTER_SECONDS,
  interruptedError: INTERRUPTED_ERROR,
};

/** What a run needs of its number besides the claim: from memory while the configuration holds. */
interface DrainSender {
  provider: string;
  defaultRate: number;
  /** Null when the number's carrier has no credentials: its messages fail. */
  credentials: Record<string, string> | null;
}

export class SmsDrain {
  /** Keyed by the number's id; checked against the organization's version by every claim. */
  readonly #senders = new VersionedCache<DrainSender>({ ttlMs: 10 * 60_000, maxEntries: 20_000 });
  /** Each number's next run by this process, on a timer (at most one per number: the earliest). */
  readonly #nextRuns = new Map<number, { at: number; timer: NodeJS.Timeout }>();
  readonly #lanes = new SendLanes();
  /**
   * The turn each number's last claim (or fresh slot) of this process left; a claim that finds
   * another knows some other process claimed in between. Forgotten past MAX_KEPT_TURNS numbers.
   */
  readonly #turns = new Map<number, string>();

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      resolver: ConfigResolver;
      handOver: HandOver;
      settlement: Settlement;
      log: JobLogger;
    },
  ) {}

  /** The `sms.drain` job: claims what is due and hands it over in the background (see above). */
  async run(payload: { organization_id: number; phone_number_id: number }): Promise<void> {
    const tenant = new Tenant(payload.organization_id);
    const numberId = payload.phone_number_id;
    for (let attempt = 1; ; attempt++) {
      const sender = await this.#sender(tenant, numberId);
      const claim: Claim = sender
        ? await claimDue(this.deps.db, tenant, numberId, {
            ...CLAIM_RULES,
            version: sender.version,
            defaultRate: sender.value.defaultRate,
            notBeforeSeconds: (this.#lanes.freeInMs(numberId) ?? 0) / 1000,
          })
        : { kind: 'no-number' };
      if (claim.kind === 'stale') {
        this.#senders.forget(tenant.organizationId);
        // Each attempt resolves at the current version: only changes racing each one land here.
        if (attempt < MAX_STALE_ATTEMPTS) continue;
        throw new Error('The sending number kept changing while its queue was being drained');
      }
      if (claim.kind === 'no-number') return this.#numberRemoved(tenant);
      if (claim.nextRunInMs !== undefined) this.#runIn(payload, claim.nextRunInMs);
      const shared = this.#turns.get(numberId) !== claim.turnBefore;
      if (this.#turns.size >= MAX_KEPT_TURNS) this.#turns.clear();
      if (claim.turnAfter === null) this.#turns.delete(numberId);
      else this.#turns.set(numberId, claim.turnAfter);
      if (claim.messages.length > 0) {
        this.deps.queue.track(this.#handOverBatch(tenant, numberId, sender!.value, claim, shared));
      }
      return;
    }
  }

  /** Wakes a drain for every number with queued messages (a process starting its workers). */
  async wakeEveryQueue(): Promise<void> {
    if ((await wakeEveryQueueOnPlatform(this.deps.db)) > 0) this.deps.queue.wake('sms.drain');
  }

  /** Forgets this process's timed runs (it stops; the wake-up jobs stay for whoever runs next). */
  stop(): void {
    for (const { timer } of this.#nextRuns.values()) clearTimeout(timer);
    this.#nextRuns.clear();
  }

  /** The number as a run needs it, resolved at the organization's version; undefined when it is gone. */
  async #sender(tenant: Tenant, numberId: number): Promise<Versioned<DrainSender> | undefined> {
    const key = String(numberId);
    const kept = this.#senders.get(tenant.organizationId, key);
    if (kept) return kept;
    // The version first, then what it stands for: a change in between makes the entry older than
    // its data, never newer, and the claim's check catches it.
    const version = await configVersion(this.deps.db, tenant);
    const number = await findPhoneNumber(this.deps.db, tenant, numberId);
    if (!number) return undefined;
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: number.provider,
      assistantId: number.assistantId,
    });
    const entry = {
      version,
      value: { provider: number.provider, defaultRate: defaultSmsRate(number.phoneNumber), credentials },
    };
    this.#senders.set(tenant.organizationId, key, entry);
    return entry;
  }

  /**
   * Runs the number's drain again `ms` from now in this process (the job written for it waits as
   * the fallback), unless an earlier run is set already. Nothing runs once the queue stops.
   */
  #runIn(payload: { organization_id: number; phone_number_id: number }, ms: number): void {
    const numberId = payload.phone_number_id;
    const at = performance.now() + Math.max(ms, 0);
    const set = this.#nextRuns.get(numberId);
    if (set && set.at <= at) return;
    if (set) clearTimeout(set.timer);
    const timer = setTimeout(
      () => {
        this.#nextRuns.delete(numberId);
        if (!this.deps.queue.running) return;
        this.deps.queue.track(
          this.run(payload).catch((error: unknown) =>
            this.deps.log.error({ err: error, phoneNumberId: numberId }, 'an SMS drain run failed'),
          ),
        );
      },
      Math.max(ms, 0),
    );
    timer.unref();
    this.#nextRuns.set(numberId, { at, timer });
  }

  /**
   * Hands the claimed messages to the carrier, each at its slot and in order, then records the
   * answers together. A send that failed in an unexpected way (not the carrier's answer) is left
   * `sending`: nobody knows whether the carrier took it, so it is failed as interrupted later.
   */
  async #handOverBatch(
    tenant: Tenant,
    numberId: number,
    sender: DrainSender,
    claim: Extract<Claim, { kind: 'claimed' }>,
    shared: boolean,
  ): Promise<void> {
    const claimedAt = performance.now();
    const { credentials } = sender;
    try {
      if (!credentials) {
        await this.deps.handOver.record(
          tenant,
          claim.messages.map((message) => ({
            id: message.id,
            status: 'failed' as const,
            error: `No ${message.provider} credentials`,
          })),
        );
        return;
      }
      // Each leaves at its slot, in order, a gap after the number's previous one (send-lanes.ts).
      // Another process claimed the number's messages since this one last did (or this one has
      // not yet): a message that would leave late takes a fresh slot (send-lanes.ts). The database
      // away, it leaves as it is.
      const retake = shared
        ? async () => {
            try {
              const taken = await takeSmsTurn(this.deps.db, tenant, numberId, claim.gapMs / 1000);
              if (taken) this.#turns.set(numberId, taken.turn);
              return taken?.inMs;
            } catch (error) {
              this.deps.log.warn({ err: error, phoneNumberId: numberId }, 'taking a fresh SMS slot failed');
              return undefined;
            }
          }
        : undefined;
      const answers = claim.messages.map((message) =>
        this.#lanes.enqueue(
          numberId,
          claimedAt + message.waitMs,
          claim,
          () => this.#send(tenant, message, credentials),
          retake,
        ),
      );
      const settled = (await Promise.all(answers)).filter((answer) => answer !== undefined);
      let retryInSeconds: number | undefined;
      await this.deps.handOver.record(tenant, settled, async (_tx, jobs, recorded) => {
        retryInSeconds = undefined;
        if (recorded.requeued.length === 0) return;
        // The number's drain comes back when the first of them may be tried again (or sooner, for
        // the messages behind them: a wake-up already waiting is kept).
        const attempts = Math.min(...recorded.requeued.map((message) => message.attempts));
        retryInSeconds = RETRY_BASE_SECONDS * 2 ** (attempts - 1);
        await jobs.enqueue(
          'sms.drain',
          { organization_id: tenant.organizationId, phone_number_id: numberId },
          { singletonKey: String(numberId), startAfterSeconds: retryInSeconds },
        );
      });
      if (retryInSeconds !== undefined)
        this.#runIn(
          { organization_id: tenant.organizationId, phone_number_id: numberId },
          retryInSeconds * 1000,
        );
    } catch (error) {
      this.deps.log.error(
        { err: error, organizationId: tenant.organizationId, phoneNumberId: numberId },
        'recording an SMS batch failed; its messages stay sending until found interrupted',
      );
    }
  }

  async #send(
    tenant: Tenant,
    message: ClaimedMessage,
    credentials: Record<string, string>,
  ): Promise<CarrierAnswer | undefined> {
    try {
      return await this.deps.handOver.send(message, credentials, message.attempts < MAX_ATTEMPTS);
    } catch (error) {
      this.deps.log.error(
        { err: error, organizationId: tenant.organizationId, messageId: message.id },
        'handing an SMS to its carrier failed unexpectedly; it stays sending until found interrupted',
      );
      return undefined;
    }
  }

  /** The number is gone: its queued messages (their number emptied by the foreign key) fail. */
  async #numberRemoved(tenant: Tenant): Promise<void> {
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      const failed = await failOrphaned(tx, tenant, NUMBER_REMOVED_ERROR);
      await this.deps.settlement.tell(tx, jobs, tenant, failed);
    });
  }
}
