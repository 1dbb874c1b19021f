/**
 * Call recordings over HTTP: the owner's GET /api/v1/calls/{id}/recording (whole, byte ranges, 416,
 * the 404s that say why), the call view's `recording`, the signed URL (valid, expired, tampered),
 * DELETE /api/v1/calls/{id} with its recording's bytes, who may do what, and whether a call is
 * recorded (the assistant's say, the health-data-gated default). Recordings are made by the real
 * service and tap from frames fed here; a second platform stores them in the S3 simulator.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRecordings } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { RecordingLinks } from '../src/domains/recordings/links.js';
import type { RecordingChoice } from '../src/domains/recordings/service.js';
import { S3Simulator } from '../src/sim/s3.js';
import { encodeAudio, MULAW_8K } from '../src/voice/audio.js';
import { expectError, expectValidation } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import {
  startTestPlatform,
  TEST_SECRET_KEY,
  type TestPlatform,
  useTestPlatform,
  waitFor,
} from './support/harness.js';

// The tests share one database; each makes its own calls.
const t = useTestPlatform();
let f: Factories;
let owner: TestUser;
let other: TestUser;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
  other = await f.user();
});

const CALLER = encodeAudio(MULAW_8K, new Int16Array(160).fill(3000));
const ASSISTANT = encodeAudio(MULAW_8K, new Int16Array(160).fill(-3000));
/** 50 frames of each side: one second of stereo 8 kHz audio, a 32,044-byte WAV file. */
const WAV_BYTES = 44 + 8000 * 4;

/** A finished call of `user`'s organization, recorded through the platform's service from one second of frames. */
async function recordedCall(
  platform: TestPlatform,
  user: TestUser,
  settings: RecordingChoice = {},
  options: { close?: boolean } = {},
) {
  const call = await seedCall(platform.database, user.organizationId);
  const tap = platform.platform.services.recordings.start(
    new Tenant(user.organizationId),
    call.id,
    MULAW_8K,
    settings,
  );
  for (let i = 0; i < 50; i++) {
    tap?.caller(CALLER);
    tap?.assistant(ASSISTANT);
  }
  if (options.close !== false) {
    tap?.close();
    await platform.platform.services.recordings.drain();
  }
  return { call, tap };
}

function get(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url, headers });
}

describe('GET /api/v1/calls/{id}/recording', () => {
  it('serves the whole stereo WAV to its owner, and the call view describes it', async () => {
    const { call } = await recordedCall(t, owner);
    const response = await get(`/api/v1/calls/${call.id}/recording`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toBe('audio/wav');
    expect(response.headers['accept-ranges']).toBe('bytes');
    expect(Number(response.headers['content-length'])).toBe(WAV_BYTES);
    const wav = response.rawPayload;
    expect(wav.length).toBe(WAV_BYTES);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt16LE(22)).toBe(2);
    expect(wav.readUInt32LE(24)).toBe(8000);
    // Left the caller, right the assistant.
    expect(wav.readInt16LE(44 + 400 * 4)).toBeGreaterThan(2500);
    expect(wav.readInt16LE(44 + 400 * 4 + 2)).toBeLessThan(-2500);

    const view = await get(`/api/v1/calls/${call.id}`, owner.headers);
    expect(view.json().recording).toEqual({
      status: 'completed',
      duration_ms: 1000,
      bytes: WAV_BYTES,
      url: `${t.config.publicUrl}/api/v1/calls/${call.id}/recording`,
    });
  });

  it('serves byte ranges with 206 and Content-Range, and 416 past the end', async () => {
    const { call } = await recordedCall(t, owner);
    const url = `/api/v1/calls/${call.id}/recording`;
    const whole = (await get(url, owner.headers)).rawPayload;
    const cases: Array<[string, number, number]> = [
      ['bytes=0-43', 0, 43],
      ['bytes=32000-', 32_000, WAV_BYTES - 1],
      ['bytes=-100', WAV_BYTES - 100, WAV_BYTES - 1],
      ['bytes=100-999999', 100, WAV_BYTES - 1],
    ];
    for (const [range, start, end] of cases) {
      const part = await get(url, { ...owner.headers, range });
      expect(part.statusCode, range).toBe(206);
      expect(part.headers['content-range']).toBe(`bytes ${start}-${end}/${WAV_BYTES}`);
      expect(Number(part.headers['content-length'])).toBe(end - start + 1);
      expect(part.rawPayload.equals(whole.subarray(start, end + 1))).toBe(true);
    }
    const past = await get(url, { ...owner.headers, range: `bytes=${WAV_BYTES}-` });
    expectError(past, 416);
    expect(past.headers['content-range']).toBe(`bytes */${WAV_BYTES}`);
    // Ranges it cannot read (reversed, several, another unit) are ignored: the whole file.
    for (const range of ['bytes=5-3', 'bytes=0-1,5-9', 'items=0-10']) {
      const served = await get(url, { ...owner.headers, range });
      expect(served.statusCode, range).toBe(200);
      expect(served.rawPayload.length).toBe(WAV_BYTES);
    }
  });

  it('says why there is nothing to serve: no recording, or still recording', async () => {
    const plain = await seedCall(t.database, owner.organizationId);
    expectError(await get(`/api/v1/calls/${plain.id}/recording`, owner.headers), 404, /no recording/);
    expect((await get(`/api/v1/calls/${plain.id}`, owner.headers)).json().recording).toBeNull();

    const { call, tap } = await recordedCall(t, owner, {}, { close: false });
    await waitFor(async () => (await get(`/api/v1/calls/${call.id}`, owner.headers)).json().recording);
    expectError(await get(`/api/v1/calls/${call.id}/recording`, owner.headers), 404, /still being recorded/);
    tap?.close();
    await t.platform.services.recordings.drain();
    expect((await get(`/api/v1/calls/${call.id}/recording`, owner.headers)).statusCode).toBe(200);
  });

  it('refuses without credentials, an API key without the calls area, and another organization', async () => {
    const { call } = await recordedCall(t, owner);
    const url = `/api/v1/calls/${call.id}/recording`;
    expectError(await get(url), 401);
    const smsOnly = await f.apiKey(owner, { permissions: { sms: 'read_write' } });
    expectError(await get(url, smsOnly.headers), 403);
    expectError(await get(url, other.headers), 404, /Call not found/);
    const member = await f.member(owner.organizationId, 'user');
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    for (const headers of [member.headers, reader.headers])
      expect((await get(url, headers)).statusCode).toBe(200);
  });

  it('refuses an id that is no id', async () => {
    expectValidation(await get('/api/v1/calls/abc/recording', owner.headers), ['path', 'call_id']);
  });
});

describe('whether a call is recorded', () => {
  it('not when the assistant turns it off', async () => {
    const call = await seedCall(t.database, owner.organizationId);
    const tap = t.platform.services.recordings.start(new Tenant(owner.organizationId), call.id, MULAW_8K, {
      recording_settings: { enabled: false },
    });
    expect(tap).toBeUndefined();
  });

  it('by default not in a health-data gated organization, unless the assistant turns it on', async () => {
    const gated = await f.user();
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: gated.headers,
      payload: { settings: { hipaa_enabled: true } },
    });
    expect(put.statusCode, put.body).toBe(200);
    const byDefault = await recordedCall(t, gated);
    expect((await get(`/api/v1/calls/${byDefault.call.id}`, gated.headers)).json().recording).toBeNull();
    const rows = await t.database.db
      .select()
      .from(callRecordings)
      .where(eq(callRecordings.callId, byDefault.call.id));
    expect(rows).toEqual([]);
    const chosen = await recordedCall(t, gated, { recording_settings: { enabled: true } });
    expect((await get(`/api/v1/calls/${chosen.call.id}`, gated.headers)).json().recording).toMatchObject({
      status: 'completed',
    });
  });

  it('the assistant setting is validated', async () => {
    const assistantId = await f.assistant(owner, `Recorded ${Date.now()}`);
    const put = (payload: Record<string, unknown>) =>
      t.app.inject({
        method: 'PUT',
        url: `/api/v1/assistants/${assistantId}`,
        headers: owner.headers,
        payload,
      });
    const ok = await put({ recording_settings: { enabled: false } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().recording_settings).toEqual({ enabled: false });
    expectValidation(await put({ recording_settings: { enabled: 'yes' } }), [
      'body',
      'recording_settings',
      'enabled',
    ]);
    expectValidation(await put({ recording_settings: { enabled: true, keep_days: 3 } }), [
      'body',
      'recording_settings',
      'keep_days',
    ]);
  });
});

describe('the signed recording URL', () => {
  const pathOf = (url: string) => url.slice(t.config.publicUrl.length);

  it('serves the recording without credentials, ranges too', async () => {
    const { call } = await recordedCall(t, owner);
    const url = t.platform.services.recordings.signedUrl(call.id);
    expect(url).toMatch(
      new RegExp(`^${t.config.publicUrl}/api/v1/recordings/${call.id}\\?expires=\\d+&signature=`),
    );
    const whole = await get(pathOf(url));
    expect(whole.statusCode, whole.body).toBe(200);
    expect(whole.rawPayload.length).toBe(WAV_BYTES);
    const part = await get(pathOf(url), { range: 'bytes=0-3' });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload.toString('ascii')).toBe('RIFF');
  });

  it('refuses an expired or altered link with 403', async () => {
    const { call } = await recordedCall(t, owner);
    const links = new RecordingLinks(TEST_SECRET_KEY, t.config.publicUrl, 3600);
    const expired = links.url(call.id, Date.now() - 2 * 3600_000);
    expectError(await get(pathOf(expired)), 403, /expired/);

    const good = new URL(t.platform.services.recordings.signedUrl(call.id));
    const expires = Number(good.searchParams.get('expires'));
    const signature = good.searchParams.get('signature')!;
    const { call: another } = await recordedCall(t, owner);
    const altered = [
      `/api/v1/recordings/${another.id}?expires=${expires}&signature=${signature}`,
      `/api/v1/recordings/${call.id}?expires=${expires + 3600}&signature=${signature}`,
      `/api/v1/recordings/${call.id}?expires=${expires}&signature=${signature.slice(0, -2)}AA`,
      `/api/v1/recordings/${call.id}?expires=${expires}&signature=short`,
    ];
    for (const url of altered) expectError(await get(url), 403, /not valid/);
    // A link signed under another server's key is no link here.
    const foreign = new RecordingLinks(`${TEST_SECRET_KEY}-other`, t.config.publicUrl, 3600).url(call.id);
    expectError(await get(pathOf(foreign)), 403, /not valid/);
  });

  it('needs both parameters', async () => {
    expectValidation(await get('/api/v1/recordings/1?signature=x'), ['query', 'expires']);
    expectValidation(await get('/api/v1/recordings/1?expires=5'), ['query', 'signature']);
  });

  it('a genuine link to a call without a recording is 404', async () => {
    const plain = await seedCall(t.database, owner.organizationId);
    expectError(await get(pathOf(t.platform.services.recordings.signedUrl(plain.id))), 404, /no recording/);
  });
});

describe('DELETE /api/v1/calls/{id}', () => {
  const del = (id: number, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'DELETE', url: `/api/v1/calls/${id}`, headers });
  const fileOf = (user: TestUser, callId: number) =>
    path.join(t.config.dataDir, 'storage', 'recordings', String(user.organizationId), `${callId}.wav`);

  it('deletes an ended call and its recording’s bytes', async () => {
    const { call } = await recordedCall(t, owner);
    expect(existsSync(fileOf(owner, call.id))).toBe(true);
    const signed = t.platform.services.recordings.signedUrl(call.id).slice(t.config.publicUrl.length);
    const response = await del(call.id, owner.headers);
    expect(response.statusCode, response.body).toBe(204);
    expect(existsSync(fileOf(owner, call.id))).toBe(false);
    expectError(await get(`/api/v1/calls/${call.id}`, owner.headers), 404);
    expectError(await get(`/api/v1/calls/${call.id}/recording`, owner.headers), 404);
    expectError(await get(signed), 404);
    expectError(await del(call.id, owner.headers), 404);
  });

  it('refuses a call still under way (409)', async () => {
    const live = await seedCall(t.database, owner.organizationId, { status: 'in-progress', endedAt: null });
    expectError(await del(live.id, owner.headers), 409, /in-progress/);
    expect((await get(`/api/v1/calls/${live.id}`, owner.headers)).statusCode).toBe(200);
  });

  it('is for admins and keys with calls read_write; another organization’s call is 404', async () => {
    const { call } = await recordedCall(t, owner);
    expectError(await del(call.id), 401);
    const member = await f.member(owner.organizationId, 'user');
    expectError(await del(call.id, member.headers), 403);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expectError(await del(call.id, reader.headers), 403);
    expectError(await del(call.id, other.headers), 404);
    expect(existsSync(fileOf(owner, call.id))).toBe(true);
    const writer = await f.apiKey(owner, { permissions: { calls: 'read_write' } });
    expect((await del(call.id, writer.headers)).statusCode).toBe(204);
    expect(existsSync(fileOf(owner, call.id))).toBe(false);
  });
});

describe('recordings in an S3-compatible bucket', () => {
  const s3 = new S3Simulator();
  let bucket: TestPlatform;
  let admin: TestUser;

  beforeAll(async () => {
    const endpoint = await s3.start();
    s3.addCredentials('AKIDRECORDINGS', 'recordings-secret');
    s3.addBucket('calls');
    bucket = await startTestPlatform({
      STORAGE_BACKEND: 's3',
      S3_ENDPOINT_URL: endpoint,
      S3_BUCKET: 'calls',
      S3_ACCESS_KEY_ID: 'AKIDRECORDINGS',
      S3_SECRET_ACCESS_KEY: 'recordings-secret',
    });
    admin = await new Factories(bucket).user();
  });
  afterAll(async () => {
    await bucket?.close();
    await s3.stop();
  });

  it('stores, serves by range and deletes through the bucket', async () => {
    const { call } = await recordedCall(bucket, admin);
    const key = `recordings/${admin.organizationId}/${call.id}.wav`;
    expect(s3.object('calls', key)?.body.length).toBe(WAV_BYTES);
    const part = await bucket.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${call.id}/recording`,
      headers: { ...admin.headers, range: 'bytes=8-11' },
    });
    expect(part.statusCode, part.body).toBe(206);
    expect(part.rawPayload.toString('ascii')).toBe('WAVE');
    const deleted = await bucket.app.inject({
      method: 'DELETE',
      url: `/api/v1/calls/${call.id}`,
      headers: admin.headers,
    });
    expect(deleted.statusCode).toBe(204);
    expect(s3.object('calls', key)).toBeUndefined();
  });

  it('a bucket that fails leaves the recording failed, and says so', async () => {
    s3.failNext(1);
    const { call } = await recordedCall(bucket, admin);
    const view = await bucket.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${call.id}`,
      headers: admin.headers,
    });
    expect(view.json().recording).toMatchObject({ status: 'failed', bytes: null, duration_ms: null });
    const response = await bucket.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${call.id}/recording`,
      headers: admin.headers,
    });
    expectError(response, 404, /recording failed: S3 answered 500 InternalError/);
  });
});
