/**
 * Storage in an S3-compatible bucket (AWS S3, MinIO, R2, …), addressed path-style
 * (`{endpoint}/{bucket}/{key}`), through a small hand-written client: PUT, GET (with Range), HEAD and
 * DELETE, each signed with AWS Signature Version 4 (`sigv4-sign.ts`). A body is streamed with its
 * length and `UNSIGNED-PAYLOAD` (a body of unknown length is spooled to a temporary file first, as a
 * single PUT needs its length up front); an object appears whole or not at all, as S3 itself does.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EMPTY_SHA256, signRequest, UNSIGNED_PAYLOAD } from './sigv4-sign.js';
import {
  type ByteRange,
  checkKey,
  type PutOptions,
  RangeNotSatisfiable,
  type Storage,
  type StorageBody,
  StorageNotFound,
  type StoredObject,
  type StoredStream,
} from './storage.js';

export interface S3Settings {
  /** `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000`… */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Longest silence on a connection before the request fails (ms). */
  timeoutMs?: number;
}

/** A bucket refused or failed a request (other than a missing object or a range past its end). */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`S3 answered ${status} ${code}: ${message}`);
    this.name = 'S3Error';
  }
}

const DEFAULT_TYPE = 'application/octet-stream';
/** An error body is read up to this many bytes (its code and message are near the start). */
const ERROR_BODY_LIMIT = 16_384;

export class S3Storage implements Storage {
  readonly #endpoint: URL;

  constructor(private readonly settings: S3Settings) {
    this.#endpoint = new URL(settings.endpoint);
  }

  async put(key: string, body: StorageBody, options: PutOptions): Promise<StoredObject> {
    checkKey(key);
    if (options.size === undefined) return this.#putSpooled(key, body, options.contentType);
    const source = body instanceof Readable ? body : Readable.from(body, { objectMode: false });
    const response = await this.#send('PUT', key, {
      headers: { 'content-type': options.contentType, 'content-length': String(options.size) },
      body: source,
    });
    await expectOk(response);
    response.resume();
    return { size: options.size, contentType: options.contentType };
  }

  /** A body of unknown length, written to a temporary file to learn it, then sent from there. */
  async #putSpooled(key: string, body: StorageBody, contentType: string): Promise<StoredObject> {
    const dir = await mkdtemp(path.join(tmpdir(), 'switchboard-s3-'));
    try {
      const file = path.join(dir, 'body');
      const source = body instanceof Readable ? body : Readable.from(body, { objectMode: false });
      await pipeline(source, createWriteStream(file));
      const { size } = await stat(file);
      return await this.put(key, createReadStream(file), { contentType, size });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async get(key: string, range?: ByteRange): Promise<StoredStream> {
    checkKey(key);
    if (range && (range.start < 0 || range.start > range.end)) {
      throw new RangeNotSatisfiable((await this.stat(key))?.size ?? 0);
    }
    const response = await this.#send('GET', key, {
      headers: range ? { range: `bytes=${range.start}-${range.end}` } : {},
    });
    if (response.statusCode === 404) {
      // A missing bucket is a fault of the setup, not a missing object.
      const error = await expectOk(response).catch((e: unknown) => e);
      throw error instanceof S3Error && error.code !== 'NoSuchKey' ? error : new StorageNotFound(key);
    }
    if (response.statusCode === 416) {
      response.resume();
      const size = (await this.stat(key))?.size;
      if (size === undefined) throw new StorageNotFound(key);
      throw new RangeNotSatisfiable(size);
    }
    await expectOk(response);
    const contentType = header(response, 'content-type') ?? DEFAULT_TYPE;
    if (response.statusCode === 206) {
      const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(header(response, 'content-range') ?? '');
      if (!match) {
        response.destroy();
        throw new S3Error(206, 'BadContentRange', 'a partial answer without a readable Content-Range');
      }
      return {
        size: Number(match[3]),
        contentType,
        body: response,
        range: { start: Number(match[1]), end: Number(match[2]) },
      };
    }
    const size = Number(header(response, 'content-length') ?? Number.NaN);
    // A bucket that ignores Range sends the whole object: served whole, as HTTP allows.
    return { size, contentType, body: response };
  }

  async stat(key: string): Promise<StoredObject | undefined> {
    checkKey(key);
    const response = await this.#send('HEAD', key, {});
    response.resume();
    if (response.statusCode === 404) return undefined;
    await expectOk(response);
    return {
      size: Number(header(response, 'content-length') ?? 0),
      contentType: header(response, 'content-type') ?? DEFAULT_TYPE,
    };
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    // S3 answers 204 for a missing object too; a 404 is a missing bucket.
    const response = await this.#send('DELETE', key, {});
    await expectOk(response);
    response.resume();
  }

  /** Sends one signed request and resolves when the answer's head arrives. */
  #send(
    method: 'PUT' | 'GET' | 'HEAD' | 'DELETE',
    key: string,
    options: { headers?: Record<string, string>; body?: Readable },
  ): Promise<IncomingMessage> {
    const base = this.#endpoint.pathname.replace(/\/+$/, '');
    const objectPath = `${base}/${encodeSegment(this.settings.bucket)}/${key.split('/').map(encodeSegment).join('/')}`;
    const headers: Record<string, string> = {
      host: this.#endpoint.host,
      'x-amz-content-sha256': options.body ? UNSIGNED_PAYLOAD : EMPTY_SHA256,
      ...options.headers,
    };
    headers.authorization = signRequest({
      method,
      path: objectPath,
      query: '',
      headers,
      payloadHash: headers['x-amz-content-sha256']!,
      credentials: this.settings,
      region: this.settings.region,
      service: 's3',
      now: Date.now(),
    });
    const request = this.#endpoint.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const outgoing = request(
        {
          protocol: this.#endpoint.protocol,
          hostname: this.#endpoint.hostname,
          port: this.#endpoint.port || undefined,
          method,
          path: objectPath,
          headers,
        },
        resolve,
      );
      outgoing.setTimeout(this.settings.timeoutMs ?? 30_000, () =>
        outgoing.destroy(
          new S3Error(0, 'Timeout', `no answer within ${this.settings.timeoutMs ?? 30_000} ms`),
        ),
      );
      outgoing.on('error', reject);
      if (options.body) {
        pipeline(options.body, outgoing).catch((error: unknown) => {
          outgoing.destroy(error as Error);
          reject(error);
        });
      } else {
        outgoing.end();
      }
    });
  }
}

/** URI-encodes one path segment as SigV4 and S3 want it (unreserved characters kept). */
function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function header(response: IncomingMessage, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Throws S3Error (with the bucket's code and message) unless the answer is a success. */
async function expectOk(response: IncomingMessage): Promise<void> {
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300) return;
  let text = '';
  for await (const chunk of response) {
    if (text.length < ERROR_BODY_LIMIT) text += String(chunk);
  }
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'Unknown';
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? (text.slice(0, 200) || 'no message');
  throw new S3Error(status, code, message);
}
