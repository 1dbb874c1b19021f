/**
 * Storage as files under one root directory (DATA_DIR/storage by default): a key is a relative path.
 * A write goes to a temporary file beside the objects and is renamed into place, so a reader sees the
 * old object or the new one, never half of one; the content type sits in a small file under `.meta/`.
 * Both hidden directories start with a dot, which no key segment may (storage.ts), so no key reaches them.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type ByteRange,
  checkKey,
  fitRange,
  type PutOptions,
  type Storage,
  type StorageBody,
  StorageNotFound,
  type StoredObject,
  type StoredStream,
} from './storage.js';

const DEFAULT_TYPE = 'application/octet-stream';

export class FileStorage implements Storage {
  readonly #tmp: string;
  readonly #meta: string;

  constructor(private readonly root: string) {
    this.#tmp = path.join(root, '.tmp');
    this.#meta = path.join(root, '.meta');
  }

  #path(key: string): string {
    return path.join(this.root, checkKey(key));
  }

  async put(key: string, body: StorageBody, options: PutOptions): Promise<StoredObject> {
    const target = this.#path(key);
    await mkdir(this.#tmp, { recursive: true });
    const temporary = path.join(this.#tmp, randomUUID());
    try {
      const out = createWriteStream(temporary, { flags: 'wx' });
      let size = 0;
      const source = body instanceof Readable ? body : Readable.from(body, { objectMode: false });
      source.on('data', (chunk: Buffer) => {
        size += chunk.length;
      });
      await pipeline(source, out);
      // The type first: a reader finding the new bytes finds their type.
      await this.#writeType(key, options.contentType);
      await mkdir(path.dirname(target), { recursive: true });
      await rename(temporary, target);
      return { size, contentType: options.contentType };
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }

  async #writeType(key: string, contentType: string): Promise<void> {
    const file = path.join(this.#meta, key);
    await mkdir(path.dirname(file), { recursive: true });
    const temporary = path.join(this.#tmp, randomUUID());
    await writeText(temporary, contentType);
    await rename(temporary, file);
  }

  async #readType(key: string): Promise<string> {
    try {
      return (await readFile(path.join(this.#meta, key), 'utf8')) || DEFAULT_TYPE;
    } catch {
      return DEFAULT_TYPE;
    }
  }

  async get(key: string, range?: ByteRange): Promise<StoredStream> {
    const file = this.#path(key);
    // One open file for the size and the bytes: a rename in between cannot mix two objects.
    const handle = await open(file, 'r').catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' || error.code === 'EISDIR' || error.code === 'ENOTDIR'
        ? new StorageNotFound(key)
        : error;
    });
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw new StorageNotFound(key);
      const served = range ? fitRange(range, stats.size) : undefined;
      const contentType = await this.#readType(key);
      const body = handle.createReadStream(served ? { start: served.start, end: served.end } : {});
      return { size: stats.size, contentType, body, ...(served ? { range: served } : {}) };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async stat(key: string): Promise<StoredObject | undefined> {
    try {
      const handle = await open(this.#path(key), 'r');
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) return undefined;
        return { size: stats.size, contentType: await this.#readType(key) };
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (['ENOENT', 'EISDIR', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? ''))
        return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
    await rm(path.join(this.#meta, key), { force: true });
  }
}

async function writeText(file: string, text: string): Promise<void> {
  const handle = await open(file, 'wx');
  try {
    await handle.writeFile(text, 'utf8');
  } finally {
    await handle.close();
  }
}
