/**
 * The storage interface: named byte objects (call recordings, knowledge-base documents) kept outside
 * the database, streamed in and out and never held whole in memory. One contract, two backends —
 * files under DATA_DIR/storage (`files.ts`) and an S3-compatible bucket (`s3.ts`) — chosen by
 * configuration (`create.ts`). Keys are relative names checked here once for every backend, so no
 * key reaches a path outside the root or an object outside its prefix.
 */
import type { Readable } from 'node:stream';

/** What `put` takes: a Node stream or any async iterable of bytes. */
export type StorageBody = Readable | AsyncIterable<Uint8Array>;

export interface PutOptions {
  contentType: string;
  /** The body's length in bytes when known (a bucket needs it up front; without it the body is spooled to a temporary file first). */
  size?: number;
}

/** Bytes `start` to `end`, both inclusive (as HTTP ranges count them). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface StoredObject {
  /** The whole object's size in bytes. */
  size: number;
  contentType: string;
}

export interface StoredStream extends StoredObject {
  /** The bytes asked for: the whole object, or the range. */
  body: Readable;
  /** The range served, when one was asked for. */
  range?: ByteRange;
}

export interface Storage {
  /** Stores the body under `key`, replacing what was there; readers never see a half-written object. */
  put(key: string, body: StorageBody, options: PutOptions): Promise<StoredObject>;
  /** The object's bytes (or `range` of them); throws StorageNotFound, or RangeNotSatisfiable for a range past its end. */
  get(key: string, range?: ByteRange): Promise<StoredStream>;
  /** Size and type; undefined when there is no such object. */
  stat(key: string): Promise<StoredObject | undefined>;
  /** Removes the object; a missing one is no error. */
  delete(key: string): Promise<void>;
}

export class StorageNotFound extends Error {
  constructor(readonly key: string) {
    super(`No stored object ${key}`);
    this.name = 'StorageNotFound';
  }
}

export class RangeNotSatisfiable extends Error {
  constructor(readonly size: number) {
    super(`The range lies outside the object's ${size} bytes`);
    this.name = 'RangeNotSatisfiable';
  }
}

export class InvalidStorageKey extends Error {
  constructor(key: string, why: string) {
    super(`Invalid storage key ${JSON.stringify(key.slice(0, 100))}: ${why}`);
    this.name = 'InvalidStorageKey';
  }
}

/** Segments of letters, digits, `.`, `_` and `-`, each starting with a letter or digit (so never `.` or `..`). */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const MAX_KEY_LENGTH = 1024;

/**
 * Refuses what could escape the root or mean two things on two backends: absolute paths, empty
 * segments, `.` and `..`, backslashes, and anything but a small safe alphabet.
 */
export function checkKey(key: string): string {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH)
    throw new InvalidStorageKey(key, `1 to ${MAX_KEY_LENGTH} characters`);
  if (key.startsWith('/')) throw new InvalidStorageKey(key, 'absolute paths are not keys');
  for (const segment of key.split('/')) {
    if (segment === '..' || segment === '.') throw new InvalidStorageKey(key, 'no . or .. segments');
    if (!SEGMENT.test(segment))
      throw new InvalidStorageKey(
        key,
        'segments of letters, digits, . _ and -, each starting with a letter or digit',
      );
  }
  return key;
}

/** Checks a range against an object's size: `end` past the last byte is cut to it (as HTTP does). */
export function fitRange(range: ByteRange, size: number): ByteRange {
  if (range.start < 0 || range.start > range.end || range.start >= size) throw new RangeNotSatisfiable(size);
  return { start: range.start, end: Math.min(range.end, size - 1) };
}
