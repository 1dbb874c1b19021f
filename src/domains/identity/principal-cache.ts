/**
 * Authenticating every request against the database would cost a query per call, so resolved
 * principals are cached briefly. Anything that changes what a user may do (logout, key update or
 * delete, role or verification change) calls `IdentityChanges.userChanged`, which drops that user's
 * entries here at once and, through NOTIFY, in every other process of the cluster.
 */
import type { Database } from '../../db/client.js';

interface Entry<T> {
  value: T;
  userId: number;
  expiresAt: number;
}

export class PrincipalCache<T> {
  readonly #entries = new Map<string, Entry<T>>();
  readonly #keysByUser = new Map<number, Set<string>>();

  constructor(
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 50_000,
  ) {}

  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#delete(key, entry.userId);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, userId: number, value: T): void {
    if (this.#entries.size >= this.maxEntries) this.clear();
    this.#entries.set(key, { value, userId, expiresAt: Date.now() + this.ttlMs });
    const keys = this.#keysByUser.get(userId) ?? new Set<string>();
    keys.add(key);
    this.#keysByUser.set(userId, keys);
  }

  invalidateUser(userId: number): void {
    for (const key of this.#keysByUser.get(userId) ?? []) this.#entries.delete(key);
    this.#keysByUser.delete(userId);
  }

  clear(): void {
    this.#entries.clear();
    this.#keysByUser.clear();
  }

  #delete(key: string, userId: number): void {
    this.#entries.delete(key);
    this.#keysByUser.get(userId)?.delete(key);
  }
}

const CHANNEL = 'switchboard_identity_changed';

export class IdentityChanges {
  readonly #caches: Array<{ invalidateUser(userId: number): void }> = [];

  constructor(private readonly database: Database) {}

  register(cache: { invalidateUser(userId: number): void }): void {
    this.#caches.push(cache);
  }

  /** Subscribes to changes announced by other processes. */
  async start(): Promise<void> {
    await this.database.listen(CHANNEL, (payload) => {
      const userId = Number(payload);
      if (Number.isInteger(userId)) for (const cache of this.#caches) cache.invalidateUser(userId);
    });
  }

  /** Call after committing a change to what `userId` may do. */
  async userChanged(userId: number): Promise<void> {
    for (const cache of this.#caches) cache.invalidateUser(userId);
    await this.database.notify(CHANNEL, String(userId));
  }
}
