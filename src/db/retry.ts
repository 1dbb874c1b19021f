/**
 * Running a transaction again when PostgreSQL aborted it for losing a race: a deadlock (40P01) or a
 * serialization failure (40001). Both leave nothing behind — the whole transaction rolled back — and
 * PostgreSQL's advice for both is to retry it from the start. Lock ordering keeps them rare; this is
 * what makes the rare one invisible to the caller instead of a 500.
 *
 * Wrap a whole transaction (never a statement inside one: an aborted transaction cannot go on), and
 * only one whose work has no effect outside the database before it commits — it may run again.
 */
import { isTransientConflict } from './errors.js';

export interface ConflictRetryPolicy {
  /** Runs in all, the first included. */
  attempts: number;
  /** Bound of the pause before the first rerun; doubled for each further one, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Five runs, pauses of at most 20, 40, 80, 160 ms. A deadlock is only detected after PostgreSQL's
 * deadlock_timeout (1 s by default), so the pauses are small beside it.
 */
export const CONFLICT_RETRY: ConflictRetryPolicy = { attempts: 5, baseDelayMs: 20, maxDelayMs: 500 };

/**
 * Runs `transaction`, and again after a random pause when it fails with a deadlock or a
 * serialization failure, at most `policy.attempts` times; the last error is thrown. The pause is
 * random ("full jitter"): two transactions that deadlocked each other and reran after the same
 * fixed pause would meet again in the same order.
 */
export async function retryOnConflict<T>(
  transaction: () => Promise<T>,
  options: { policy?: ConflictRetryPolicy; onRetry?: (error: unknown, attempt: number) => void } = {},
): Promise<T> {
  const policy = options.policy ?? CONFLICT_RETRY;
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction();
    } catch (error) {
      if (attempt >= policy.attempts || !isTransientConflict(error)) throw error;
      options.onRetry?.(error, attempt);
      const bound = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
      await new Promise((resolve) => setTimeout(resolve, Math.random() * bound));
    }
  }
}
