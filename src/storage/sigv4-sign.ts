/**
 * Signing a request with AWS Signature Version 4, as an S3-compatible bucket checks it: the canonical
 * request (the path as sent — S3 neither normalises it nor encodes it twice — the query, the signed
 * headers trimmed and sorted, the payload's hash), the string to sign under the credential scope, and
 * the signing key's HMAC chain. The simulator (`sim/s3.ts`) verifies with its own code in `sim/sigv4.ts`.
 */
import { createHash, createHmac } from 'node:crypto';

/** The payload hash of a body that is streamed rather than hashed first. */
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
/** SHA-256 of no bytes: the payload hash of a request without a body. */
export const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

const ALGORITHM = 'AWS4-HMAC-SHA256';
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

export interface SigningRequest {
  method: string;
  /** The path as it is sent (each segment already URI-encoded). */
  path: string;
  /** The canonical query string (names and values encoded, sorted), '' for none. */
  query: string;
  /** Every header to sign, names in lower case (must include `host`); `x-amz-date` is added here. */
  headers: Record<string, string>;
  payloadHash: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  service: string;
  /** Epoch milliseconds of the signature. */
  now: number;
}

/** Adds `x-amz-date` to `request.headers` and returns the `Authorization` header's value. */
export function signRequest(request: SigningRequest): string {
  const amzDate = new Date(request.now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  request.headers['x-amz-date'] = amzDate;
  const names = Object.keys(request.headers)
    .map((name) => name.toLowerCase())
    .filter((name) => name !== 'authorization' && name !== 'content-length')
    .sort();
  const canonicalHeaders = names
    .map((name) => `${name}:${String(request.headers[name]).trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const signedHeaders = names.join(';');
  const canonical = [
    request.method,
    request.path,
    request.query,
    canonicalHeaders,
    signedHeaders,
    request.payloadHash,
  ].join('\n');
  const scope = `${date}/${request.region}/${request.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join(
    '\n',
  );
  const key = hmac(
    hmac(hmac(hmac(`AWS4${request.credentials.secretAccessKey}`, date), request.region), request.service),
    'aws4_request',
  );
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return `${ALGORITHM} Credential=${request.credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
}
