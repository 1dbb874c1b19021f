/**
 * Call recordings: whether a call is recorded (the assistant's `recording_settings.enabled`; by
 * default on, off where the organization is health-data gated — `hipaa_enabled` — unless the
 * assistant turns it on), making it (voice/recording.ts writes the WAV file as the call goes, then
 * the bytes go to the storage interface and the row says `completed`, or `failed` with why), serving
 * it to its owner or to a signed URL's holder (byte ranges too), and deleting its bytes with the call.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { ByteRange, Storage } from '../../storage/storage.js';
import type { AudioFormat } from '../../voice/audio.js';
import { StereoWavTap } from '../../voice/recording.js';
import type { AudioTap } from '../../voice/session-spec.js';
import { findCall } from '../calls/reads.js';
import { forbidden, notFound } from '../errors.js';
import { findOwnOrganization } from '../organizations/reads.js';
import type { RecordingLinks } from './links.js';
import * as store from './store.js';

/** The assistant's say on recording (`recording_settings`); absent: the organization's default. */
export interface RecordingChoice {
  recording_settings?: { enabled?: boolean | undefined } | null | undefined;
}

/** A byte range as a request asks for it: from `start` (to `end`), or the last `suffix` bytes. */
export type RangeRequest = { start: number; end?: number } | { suffix: number };

export interface RecordingStream {
  body: Readable;
  /** The whole recording's size in bytes. */
  size: number;
  contentType: string;
  /** The bytes served, when a range was asked for. */
  range?: ByteRange;
}

/** A range past the recording's end (HTTP 416); `size` is the recording's length in bytes. */
export class UnsatisfiableRange extends Error {
  constructor(readonly size: number) {
    super(`The recording has ${size} bytes; the range asked for lies outside them`);
    this.name = 'UnsatisfiableRange';
  }
}

export interface RecordingSummary {
  status: store.RecordingRow['status'];
  durationMs: number | null;
  bytes: number | null;
  /** Where its owner fetches it. */
  url: string;
}

/** Where a call's bytes are kept. */
const storageKey = (tenant: Tenant, callId: number) => `recordings/${tenant.organizationId}/${callId}.wav`;

export class RecordingService {
  /** Recordings being made or stored, so a stop can wait for them. */
  readonly #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      db: Db;
      storage: Storage;
      links: RecordingLinks;
      /** Where recordings are written while calls run (then moved to storage). */
      tempDir: string;
      log: { warn(data: object, message: string): void };
    },
  ) {}

  /**
   * Starts recording a call whose stream has begun, unless the assistant turned recording off. The
   * tap starts copying at once; whether the organization's default allows it is looked up meanwhile,
   * and a call that is not to be recorded has its few copied frames thrown away.
   */
  start(
    tenant: Tenant,
    callId: number,
    format: AudioFormat,
    settings: RecordingChoice,
  ): AudioTap | undefined {
    const enabled = settings.recording_settings?.enabled;
    if (enabled === false) return undefined;
    const file = path.join(this.deps.tempDir, `${callId}-${randomUUID()}.wav`);
    const tap = new StereoWavTap({ format, file });
    const work = this.#record(tenant, callId, format, enabled === true, tap)
      .catch((error: unknown) => this.deps.log.warn({ err: error, callId }, 'recording the call failed'))
      .finally(() => this.#inFlight.delete(work));
    this.#inFlight.add(work);
    return tap;
  }

  async #record(
    tenant: Tenant,
    callId: number,
    format: AudioFormat,
    explicitlyOn: boolean,
    tap: StereoWavTap,
  ): Promise<void> {
    let row: store.RecordingRow | undefined;
    try {
      row = (await this.#wanted(tenant, callId, explicitlyOn))
        ? await store.insertRecording(this.deps.db, tenant, {
            callId,
            storageKey: storageKey(tenant, callId),
            channels: 2,
            sampleRate: format.sampleRate,
          })
        : undefined;
    } finally {
      // Not to be recorded (or no row to say so): the tap stops copying and its file goes.
      if (!row) await tap.discard();
    }
    if (!row) return;
    let stored = false;
    try {
      const wav = await tap.finished;
      await this.deps.storage.put(row.storageKey, createReadStream(wav.file), {
        contentType: 'audio/wav',
        size: wav.bytes,
      });
      stored = true;
      const completed = await store.completeRecording(this.deps.db, tenant, row.id, {
        bytes: wav.bytes,
        durationMs: wav.durationMs,
      });
      // The call was deleted while its recording was being stored: its bytes go too.
      if (!completed) await this.deps.storage.delete(row.storageKey);
    } catch (error) {
      if (stored) await this.deps.storage.delete(row.storageKey).catch(() => {});
      await store.failRecording(this.deps.db, tenant, row.id, errorText(error));
      throw error;
    } finally {
      await rm(tap.file, { force: true });
    }
  }

  /** Explicitly on, or left to the default: on unless the organization is health-data gated. */
  async #wanted(tenant: Tenant, callId: number, explicitlyOn: boolean): Promise<boolean> {
    if (!(await findCall(this.deps.db, tenant, callId))) return false;
    if (explicitlyOn) return true;
    const organization = await findOwnOrganization(this.deps.db, tenant);
    return organization?.settings?.hipaa_enabled !== true;
  }

  /**
   * Resolves when every recording under way has been stored or has failed, or after `timeoutMs`
   * (a stop must not hang on a call whose stream never reported its end).
   */
  async drain(timeoutMs = Number.POSITIVE_INFINITY): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      if (Number.isFinite(timeoutMs)) timer = setTimeout(resolve, timeoutMs);
    });
    const settled = (async () => {
      while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    })();
    await Promise.race([settled, gaveUp]);
    clearTimeout(timer);
  }

  /** The organization's call's recording: its bytes (or a range of them). */
  async open(tenant: Tenant, callId: number, range?: RangeRequest): Promise<RecordingStream> {
    if (!(await findCall(this.deps.db, tenant, callId))) throw notFound('Call not found');
    return this.#open(await store.findRecording(this.deps.db, tenant, callId), range);
  }

  /** The recording a signed URL names, when its signature is genuine and it has not expired. */
  async openSigned(
    callId: number,
    expires: number,
    signature: string,
    range?: RangeRequest,
  ): Promise<RecordingStream> {
    const check = this.deps.links.check(callId, expires, signature);
    if (check === 'expired') throw forbidden('This recording link has expired');
    if (check === 'invalid') throw forbidden('This recording link is not valid');
    return this.#open(await store.unscoped.recordingOfCall(this.deps.db, callId), range);
  }

  async #open(
    row: store.RecordingRow | undefined,
    range: RangeRequest | undefined,
  ): Promise<RecordingStream> {
    if (!row) throw notFound('The call has no recording');
    if (row.status === 'recording')
      throw notFound('The call is still being recorded: the recording is ready shortly after the call ends');
    if (row.status === 'failed')
      throw notFound(`The call's recording failed: ${row.error ?? 'unknown error'}`);
    const size = row.bytes ?? 0;
    const wanted = range === undefined ? undefined : rangeWithin(range, size);
    const object = await this.deps.storage.get(row.storageKey, wanted);
    return {
      body: object.body,
      size: object.size,
      contentType: row.contentType,
      ...(object.range ? { range: object.range } : {}),
    };
  }

  /** The signed URL of a call's recording, for the end-of-call webhook. */
  signedUrl(callId: number): string {
    return this.deps.links.url(callId);
  }

  /** What the call view shows of the recording; null when the call has none. */
  async summary(tenant: Tenant, callId: number): Promise<RecordingSummary | null> {
    const row = await store.findRecording(this.deps.db, tenant, callId);
    return row
      ? {
          status: row.status,
          durationMs: row.durationMs,
          bytes: row.bytes,
          url: this.deps.links.ownerUrl(callId),
        }
      : null;
  }

  /** Removes the bytes of a call's recording (the call is being deleted; its row goes with the call). */
  async deleteFor(tenant: Tenant, callId: number): Promise<void> {
    const row = await store.findRecording(this.deps.db, tenant, callId);
    if (row) await this.deps.storage.delete(row.storageKey);
  }
}

/** A requested range within `size` bytes, or UnsatisfiableRange. */
function rangeWithin(range: RangeRequest, size: number): ByteRange {
  if ('suffix' in range) {
    if (range.suffix <= 0 || size === 0) throw new UnsatisfiableRange(size);
    return { start: Math.max(0, size - range.suffix), end: size - 1 };
  }
  if (range.start >= size || (range.end !== undefined && range.end < range.start))
    throw new UnsatisfiableRange(size);
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
