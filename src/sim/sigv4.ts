/**
 * AWS Signature Version 4 as the cloud function simulator checks it: the Authorization header's
 * fields, the canonical request, the signing-key chain and the signature it expects, and the
 * `X-Amz-Date` format. The simulator recomputes what a real client (the AWS SDK) signs, so this is
 * written from the specification, not from the SDK, and kept apart from the simulator's API.
 */
import { createHash, createHmac } from 'node:crypto';

const ALGORITHM = 'AWS4-HMAC-SHA256';

export const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 encoding as SigV4 wants it: everything but unreserved characters, upper-case hex. */
function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The SigV4 signing key: HMAC chain over date, region, service and the terminator. */
export function signingKey(secretAccessKey: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), 'aws4_request');
}

/**
 * The canonical request of SigV4 for a request as received: method, canonical URI (the path
 * normalised, each segment URI-encoded once more, as every service but S3 signs it), canonical
 * query (names and values decoded, re-encoded, sorted), the signed headers with their values
 * trimmed and inner spaces collapsed, the list of signed headers, and the payload hash. S3 signs the
 * path as sent instead (`s3: true`): neither normalised nor encoded again.
 */
export function canonicalRequest(request: {
  method: string;
  /** Path and query as they arrived (still percent-encoded). */
  url: string;
  headers: Record<string, string[] | undefined>;
  signedHeaders: string[];
  payloadHash: string;
  s3?: boolean;
}): string {
  const questionMark = request.url.indexOf('?');
  const rawPath = questionMark === -1 ? request.url : request.url.slice(0, questionMark);
  const rawQuery = questionMark === -1 ? '' : request.url.slice(questionMark + 1);

  // Empty and `.` segments go, `..` removes its parent; then the whole path is encoded once more.
  const segments: string[] = [];
  for (const segment of rawPath.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const normalized = `${rawPath.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && rawPath.endsWith('/') ? '/' : ''}`;
  const canonicalPath = request.s3 ? rawPath : uriEncode(normalized).replace(/%2F/g, '/');

  const pairs = rawQuery
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const equals = part.indexOf('=');
      const name = equals === -1 ? part : part.slice(0, equals);
      const value = equals === -1 ? '' : part.slice(equals + 1);
      return [uriEncode(decode(name)), uriEncode(decode(value))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  const canonicalQuery = pairs.map(([name, value]) => `${name}=${value}`).join('&');

  const canonicalHeaders = request.signedHeaders
    .map((name) => {
      const values = request.headers[name] ?? [];
      return `${name}:${values.map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}\n`;
    })
    .join('');

  return [
    request.method,
    canonicalPath,
    canonicalQuery,
    canonicalHeaders,
    request.signedHeaders.join(';'),
    request.payloadHash,
  ].join('\n');
}

export interface ParsedAuthorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

export function parseAuthorization(header: string | undefined): ParsedAuthorization | undefined {
  if (!header?.startsWith(`${ALGORITHM} `)) return undefined;
  const fields = new Map<string, string>();
  for (const part of header.slice(ALGORITHM.length + 1).split(',')) {
    const equals = part.indexOf('=');
    if (equals > 0) fields.set(part.slice(0, equals).trim(), part.slice(equals + 1).trim());
  }
  const credential = fields.get('Credential')?.split('/');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential?.length !== 5 || credential[4] !== 'aws4_request' || !signedHeaders || !signature) {
    return undefined;
  }
  const [accessKeyId, date, region, service] = credential as [string, string, string, string];
  return { accessKeyId, date, region, service, signedHeaders: signedHeaders.split(';'), signature };
}

/** `20261121T101500Z` → epoch milliseconds. */
export function parseAmzDate(value: string | undefined): number | undefined {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  if (!match) return undefined;
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  return Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
}

export function amzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** The signature SigV4 expects for `canonical`, signed at `amzDate` within the authorization's scope. */
export function expectedSignature(
  secretAccessKey: string,
  authorization: ParsedAuthorization,
  amzDate: string,
  canonical: string,
): Buffer {
  const scope = `${authorization.date}/${authorization.region}/${authorization.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonical)].join('\n');
  return createHmac(
    'sha256',
    signingKey(secretAccessKey, authorization.date, authorization.region, authorization.service),
  )
    .update(stringToSign, 'utf8')
    .digest();
}
