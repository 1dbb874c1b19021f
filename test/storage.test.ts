/**
 * The storage interface on both backends — files under a directory, and an S3-compatible bucket (the
 * S3 simulator, every request signed and checked) — run through one suite: put and get, byte ranges,
 * a range past the end, stat, delete, a missing object, a body of unknown length, replacement, and
 * key validation. Then what only a bucket does: a wrong secret or a failing service is an S3Error.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Simulator } from '../src/sim/s3.js';
import { FileStorage } from '../src/storage/files.js';
import { S3Error, S3Storage } from '../src/storage/s3.js';
import {
  checkKey,
  InvalidStorageKey,
  RangeNotSatisfiable,
  type Storage,
  StorageNotFound,
} from '../src/storage/storage.js';

const root = mkdtempSync(path.join(tmpdir(), 'switchboard-storage-'));
const s3 = new S3Simulator();
let bucketUrl = '';

beforeAll(async () => {
  bucketUrl = await s3.start();
  s3.addCredentials('AKIDSTORAGE', 'storage-secret-key');
  s3.addBucket('recordings');
});
afterAll(async () => {
  await s3.stop();
  rmSync(root, { recursive: true, force: true });
});

async function text(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** 10,000 bytes whose content says where each byte is. */
const LARGE = Buffer.from(
  Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(65 + (i % 26))).join(''),
);

const backends: Array<[string, () => Storage]> = [
  ['files', () => new FileStorage(path.join(root, 'files'))],
  [
    's3',
    () =>
      new S3Storage({
        endpoint: bucketUrl,
        bucket: 'recordings',
        region: 'eu-west-1',
        accessKeyId: 'AKIDSTORAGE',
        secretAccessKey: 'storage-secret-key',
      }),
  ],
];

describe.each(backends)('%s storage', (_name, make) => {
  let storage: Storage;
  beforeAll(() => {
    storage = make();
  });

  it('stores a stream and gives it back whole, with its size and type', async () => {
    const put = await storage.put(
      'docs/a.txt',
      Readable.from([Buffer.from('hello '), Buffer.from('world')]),
      {
        contentType: 'text/plain',
        size: 11,
      },
    );
    expect(put).toEqual({ size: 11, contentType: 'text/plain' });
    const got = await storage.get('docs/a.txt');
    expect(got.size).toBe(11);
    expect(got.contentType).toBe('text/plain');
    expect(got.range).toBeUndefined();
    expect(await text(got.body)).toBe('hello world');
    expect(await storage.stat('docs/a.txt')).toEqual({ size: 11, contentType: 'text/plain' });
  });

  it('serves byte ranges, cutting an end past the last byte', async () => {
    await storage.put('ranges/large.bin', Readable.from([LARGE]), {
      contentType: 'audio/wav',
      size: LARGE.length,
    });
    const middle = await storage.get('ranges/large.bin', { start: 26, end: 51 });
    expect(middle.range).toEqual({ start: 26, end: 51 });
    expect(middle.size).toBe(10_000);
    expect(await text(middle.body)).toBe('ABCDEFGHIJKLMNOPQRSTUVWXYZ');
    const tail = await storage.get('ranges/large.bin', { start: 9_998, end: 20_000 });
    expect(tail.range).toEqual({ start: 9_998, end: 9_999 });
    expect(await text(tail.body)).toBe(LARGE.subarray(9_998).toString());
  });

  it('refuses a range that starts past the end, saying the size', async () => {
    const refused = await storage.get('ranges/large.bin', { start: 10_000, end: 10_100 }).catch((e) => e);
    expect(refused).toBeInstanceOf(RangeNotSatisfiable);
    expect((refused as RangeNotSatisfiable).size).toBe(10_000);
  });

  it('takes a body of unknown length from an async iterable', async () => {
    async function* pieces() {
      for (let i = 0; i < 5; i++) yield new TextEncoder().encode(`piece ${i};`);
    }
    const put = await storage.put('spooled/body.txt', pieces(), { contentType: 'text/plain' });
    expect(put.size).toBe(40);
    expect(await text((await storage.get('spooled/body.txt')).body)).toBe(
      'piece 0;piece 1;piece 2;piece 3;piece 4;',
    );
  });

  it('replaces an object whole', async () => {
    await storage.put('replace/x', Readable.from([Buffer.from('first version')]), {
      contentType: 'text/plain',
      size: 13,
    });
    await storage.put('replace/x', Readable.from([Buffer.from('second')]), {
      contentType: 'application/json',
      size: 6,
    });
    const got = await storage.get('replace/x');
    expect(got.contentType).toBe('application/json');
    expect(await text(got.body)).toBe('second');
  });

  it('deletes, and a missing object is not found (deleting it again is no error)', async () => {
    await storage.put('gone/soon', Readable.from([Buffer.from('bye')]), {
      contentType: 'text/plain',
      size: 3,
    });
    await storage.delete('gone/soon');
    expect(await storage.stat('gone/soon')).toBeUndefined();
    await expect(storage.get('gone/soon')).rejects.toBeInstanceOf(StorageNotFound);
    await expect(storage.delete('gone/soon')).resolves.toBeUndefined();
    await expect(storage.get('never/was')).rejects.toBeInstanceOf(StorageNotFound);
  });

  it('refuses keys that could leave the root, on every operation', async () => {
    for (const key of [
      '../escape',
      'a/../../b',
      '/etc/passwd',
      'a//b',
      './a',
      'a/.',
      '.hidden',
      'a\\b',
      '',
      'sp ace',
    ]) {
      await expect(
        storage.put(key, Readable.from([]), { contentType: 'text/plain', size: 0 }),
      ).rejects.toBeInstanceOf(InvalidStorageKey);
      await expect(storage.get(key)).rejects.toBeInstanceOf(InvalidStorageKey);
      await expect(storage.stat(key)).rejects.toBeInstanceOf(InvalidStorageKey);
      await expect(storage.delete(key)).rejects.toBeInstanceOf(InvalidStorageKey);
    }
  });
});

describe('key validation', () => {
  it('takes relative keys of safe segments', () => {
    expect(checkKey('recordings/17/42.wav')).toBe('recordings/17/42.wav');
    expect(checkKey('kb/doc-1_v2.pdf')).toBe('kb/doc-1_v2.pdf');
    expect(() => checkKey('x'.repeat(1025))).toThrow(InvalidStorageKey);
  });
});

describe('file storage', () => {
  it('leaves no temporary file behind and nothing outside its root', async () => {
    const dir = path.join(root, 'tidy');
    const storage = new FileStorage(dir);
    await storage.put('a/b.bin', Readable.from([Buffer.from('x')]), { contentType: 'text/plain', size: 1 });
    expect(readdirSync(path.join(dir, '.tmp'))).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['.meta', '.tmp', 'a']);
  });

  it('keeps the old object when a write fails midway', async () => {
    const storage = new FileStorage(path.join(root, 'failing'));
    await storage.put('k', Readable.from([Buffer.from('intact')]), { contentType: 'text/plain', size: 6 });
    async function* broken() {
      yield new TextEncoder().encode('half');
      throw new Error('the source broke');
    }
    await expect(storage.put('k', broken(), { contentType: 'text/plain' })).rejects.toThrow(
      'the source broke',
    );
    expect(await text((await storage.get('k')).body)).toBe('intact');
    expect(readdirSync(path.join(root, 'failing', '.tmp'))).toEqual([]);
  });
});

describe('S3 storage', () => {
  const settings = () => ({
    endpoint: bucketUrl,
    bucket: 'recordings',
    region: 'eu-west-1',
    accessKeyId: 'AKIDSTORAGE',
    secretAccessKey: 'storage-secret-key',
  });

  it('signs every request: the simulator saw each as valid and stored the bytes', async () => {
    const before = s3.requests.length;
    const storage = new S3Storage(settings());
    await storage.put('signed/check.txt', Readable.from([Buffer.from('signed')]), {
      contentType: 'text/plain',
      size: 6,
    });
    expect(s3.object('recordings', 'signed/check.txt')?.body.toString()).toBe('signed');
    expect(s3.requests.slice(before).map((r) => r.status)).toEqual([200]);
  });

  it('a wrong secret is refused with the bucket’s code', async () => {
    const storage = new S3Storage({ ...settings(), secretAccessKey: 'not-the-secret' });
    const refused = await storage.stat('signed/check.txt').catch((e) => e);
    expect(refused).toBeInstanceOf(S3Error);
    const put = await storage
      .put('x/y', Readable.from([Buffer.from('z')]), { contentType: 'text/plain', size: 1 })
      .catch((e) => e);
    expect(put).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch' });
  });

  it('an unknown bucket and a failing service are errors, not missing objects', async () => {
    const storage = new S3Storage({ ...settings(), bucket: 'no-such-bucket' });
    await expect(storage.get('a')).rejects.toMatchObject({ status: 404, code: 'NoSuchBucket' });
    s3.failNext(1);
    await expect(new S3Storage(settings()).get('signed/check.txt')).rejects.toMatchObject({
      status: 500,
      code: 'InternalError',
    });
  });
});
