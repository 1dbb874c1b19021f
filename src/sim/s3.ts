/**
 * A local S3-compatible bucket service, path-style (`/{bucket}/{key}`): PUT, GET (with `Range`), HEAD
 * and DELETE of objects, served the way S3 serves them — XML errors (`NoSuchKey`, `NoSuchBucket`,
 * `InvalidRange`, `SignatureDoesNotMatch`, `InvalidAccessKeyId`, `MissingContentLength`), `ETag`,
 * `Accept-Ranges`, 206 with `Content-Range`, 204 for a delete (also of a missing object). Every
 * request must carry an AWS Signature Version 4 `Authorization` header, recomputed here from the
 * secret registered for the access key (`sigv4.ts`, S3's canonical path); a body sent with its
 * SHA-256 is checked against it, `UNSIGNED-PAYLOAD` is taken as is. Objects live in memory.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from '../lib/net.js';
import {
  amzDate,
  canonicalRequest,
  expectedSignature,
  parseAmzDate,
  parseAuthorization,
  sha256Hex,
} from './sigv4.js';

export interface S3Object {
  body: Buffer;
  contentType: string;
  etag: string;
}

export interface S3Request {
  method: string;
  url: string;
  /** The `Range` header, when sent. */
  range?: string;
  status?: number;
  errorCode?: string;
}

const MAX_SKEW_MS = 15 * 60_000;

interface Failure {
  status: number;
  code: string;
  message: string;
}

const fail = (status: number, code: string, message: string): Failure => ({ status, code, message });

export class S3Simulator {
  readonly requests: S3Request[] = [];
  /** Objects by bucket, then key. */
  readonly buckets = new Map<string, Map<string, S3Object>>();
  readonly #secrets = new Map<string, string>();
  #failures: Failure[] = [];
  #server: Server | undefined;
  #baseUrl = '';

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#serve(req, res));
    const listening = await listenOnLoopback(this.#server, port);
    this.#baseUrl = `http://127.0.0.1:${listening}`;
    return this.#baseUrl;
  }

  async stop(): Promise<void> {
    await closeServer(this.#server);
  }

  /** Credentials the simulator accepts. */
  addCredentials(accessKeyId: string, secretAccessKey: string): void {
    this.#secrets.set(accessKeyId, secretAccessKey);
  }

  addBucket(name: string): void {
    if (!this.buckets.has(name)) this.buckets.set(name, new Map());
  }

  /** The next `count` signed requests answer `status` with `code` (default: 500 InternalError). */
  failNext(count: number, status = 500, code = 'InternalError'): void {
    for (let i = 0; i < count; i++) this.#failures.push(fail(status, code, 'Simulated failure'));
  }

  object(bucket: string, key: string): S3Object | undefined {
    return this.buckets.get(bucket)?.get(key);
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const recorded: S3Request = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      ...(typeof req.headers.range === 'string' ? { range: req.headers.range } : {}),
    };
    this.requests.push(recorded);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const refused = this.#authenticate(req, body) ?? this.#failures.shift();
    if (refused) return this.#error(res, recorded, refused);

    const path = (req.url ?? '/').split('?')[0]!;
    const [bucketName = '', ...keyParts] = path.slice(1).split('/').map(decodeURIComponent);
    const key = keyParts.join('/');
    const bucket = this.buckets.get(bucketName);
    if (!bucket)
      return this.#error(res, recorded, fail(404, 'NoSuchBucket', 'The specified bucket does not exist'));
    if (key === '')
      return this.#error(res, recorded, fail(400, 'InvalidRequest', 'Bucket operations are not simulated'));

    switch (recorded.method) {
      case 'PUT': {
        if (req.headers['content-length'] === undefined)
          return this.#error(
            res,
            recorded,
            fail(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.'),
          );
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        bucket.set(key, {
          body,
          contentType: (req.headers['content-type'] as string | undefined) ?? 'binary/octet-stream',
          etag,
        });
        recorded.status = 200;
        res.writeHead(200, { etag });
        res.end();
        return;
      }
      case 'DELETE':
        bucket.delete(key);
        recorded.status = 204;
        res.writeHead(204);
        res.end();
        return;
      case 'GET':
      case 'HEAD': {
        const object = bucket.get(key);
        if (!object) {
          if (recorded.method === 'HEAD') {
            recorded.status = 404;
            res.writeHead(404);
            res.end();
            return;
          }
          return this.#error(res, recorded, fail(404, 'NoSuchKey', 'The specified key does not exist.'));
        }
        const size = object.body.length;
        const headers = {
          'content-type': object.contentType,
          etag: object.etag,
          'accept-ranges': 'bytes',
        };
        const range = recorded.method === 'GET' ? parseRange(recorded.range, size) : undefined;
        if (range === 'unsatisfiable') {
          return this.#error(
            res,
            recorded,
            fail(416, 'InvalidRange', 'The requested range is not satisfiable'),
            {
              'content-range': `bytes */${size}`,
            },
          );
        }
        if (range) {
          recorded.status = 206;
          res.writeHead(206, {
            ...headers,
            'content-length': range.end - range.start + 1,
            'content-range': `bytes ${range.start}-${range.end}/${size}`,
          });
          res.end(object.body.subarray(range.start, range.end + 1));
          return;
        }
        recorded.status = 200;
        res.writeHead(200, { ...headers, 'content-length': size });
        res.end(recorded.method === 'HEAD' ? undefined : object.body);
        return;
      }
      default:
        return this.#error(
          res,
          recorded,
          fail(405, 'MethodNotAllowed', 'The specified method is not allowed'),
        );
    }
  }

  /** Why the request's signature is refused, or undefined when it is valid. */
  #authenticate(req: IncomingMessage, body: Buffer): Failure | undefined {
    const authorization = parseAuthorization(req.headers.authorization);
    if (!authorization) return fail(403, 'AccessDenied', 'Access Denied');
    const secret = this.#secrets.get(authorization.accessKeyId);
    if (!secret)
      return fail(
        403,
        'InvalidAccessKeyId',
        'The AWS Access Key Id you provided does not exist in our records.',
      );
    const headerDate = req.headers['x-amz-date'];
    const signedAt = parseAmzDate(typeof headerDate === 'string' ? headerDate : undefined);
    if (
      signedAt === undefined ||
      !authorization.signedHeaders.includes('host') ||
      authorization.service !== 's3'
    )
      return fail(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.');
    const now = Date.now();
    if (Math.abs(now - signedAt) > MAX_SKEW_MS)
      return fail(
        403,
        'RequestTimeTooSkewed',
        `The difference between ${headerDate} and ${amzDate(now)} is too large.`,
      );
    const declared = req.headers['x-amz-content-sha256'];
    if (typeof declared !== 'string')
      return fail(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    if (declared !== 'UNSIGNED-PAYLOAD' && declared !== sha256Hex(body))
      return fail(
        400,
        'XAmzContentSHA256Mismatch',
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
      );
    const canonical = canonicalRequest({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headersDistinct,
      signedHeaders: authorization.signedHeaders,
      payloadHash: declared,
      s3: true,
    });
    const expected = expectedSignature(secret, authorization, headerDate as string, canonical);
    const given = Buffer.from(authorization.signature, 'hex');
    if (
      given.length !== expected.length ||
      !timingSafeEqual(given, expected) ||
      !(headerDate as string).startsWith(authorization.date)
    ) {
      return fail(
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
      );
    }
    return undefined;
  }

  #error(
    res: ServerResponse,
    recorded: S3Request,
    failure: Failure,
    headers: Record<string, string> = {},
  ): void {
    recorded.status = failure.status;
    recorded.errorCode = failure.code;
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${failure.code}</Code><Message>${failure.message}</Message><Resource>${escapeXml(recorded.url)}</Resource></Error>`;
    res.writeHead(failure.status, { 'content-type': 'application/xml', ...headers });
    res.end(recorded.method === 'HEAD' ? undefined : xml);
  }
}

/** One `bytes=` range as S3 reads it; undefined for none (or one it ignores), 'unsatisfiable' past the end. */
function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header ?? '');
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  if (end < start) return undefined;
  return { start, end };
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
