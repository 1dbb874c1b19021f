/**
 * GET/PUT /api/v1/organization/concurrency-settings: the per-provider session limits, each
 * validation rule, and who may read and change them.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { type Json, organizationApi } from './support/organization-api.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const { getConcurrency, putConcurrency } = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
});

describe('GET/PUT /api/v1/organization/concurrency-settings', () => {
  it('starts empty', async () => {
    const admin = await f.user();
    const response = await getConcurrency(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ tts: {}, stt: {} });
  });

  it('PUT replaces the whole settings and GET returns them', async () => {
    const admin = await f.user();
    const first = {
      tts: {
        tts_a: { enabled: true, concurrent_limit: 10 },
        tts_b: { enabled: false, concurrent_limit: 1 },
        tts_c: { enabled: true, concurrent_limit: 100_000 },
        tts_d: { enabled: true, concurrent_limit: 3 },
      },
      stt: { stt_a: { enabled: true, concurrent_limit: 25 } },
    };
    const put = await putConcurrency(admin.headers, first);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual(first);
    expect((await getConcurrency(admin.headers)).json()).toEqual(first);

    // Replace, not merge: what is not sent is gone.
    const second = { tts: { tts_c: { enabled: false, concurrent_limit: 7 } } };
    const replaced = await putConcurrency(admin.headers, second);
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toEqual({ tts: second.tts, stt: {} });
    expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: second.tts, stt: {} });

    const emptied = await putConcurrency(admin.headers, {});
    expect(emptied.statusCode).toBe(200);
    expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: {}, stt: {} });
  });

  describe('bad input answers 422 and changes nothing', () => {
    let admin: TestUser;
    const stable = {
      tts: { tts_a: { enabled: true, concurrent_limit: 5 } },
      stt: { stt_a: { enabled: true, concurrent_limit: 6 } },
    };
    beforeAll(async () => {
      admin = await f.user();
      expect((await putConcurrency(admin.headers, stable)).statusCode).toBe(200);
    });

    it('unknown provider names (extra_forbidden)', async () => {
      const cases: Array<[Json, Array<string | number>]> = [
        [{ tts: { tts_z: { enabled: true, concurrent_limit: 1 } } }, ['body', 'tts', 'tts_z']],
        [{ tts: { stt_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'tts', 'stt_a']],
        [{ stt: { tts_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'stt', 'tts_a']],
        [{ stt: { llm_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'stt', 'llm_a']],
        [{ llm: { llm_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'llm']],
      ];
      for (const [payload, loc] of cases) {
        expectValidation(await putConcurrency(admin.headers, payload), loc, 'extra_forbidden');
      }
    });

    it.each([0, -1, 1.5, 'ten', null, 100_001])('concurrent_limit %j', async (limit) => {
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: true, concurrent_limit: limit } } }),
        ['body', 'tts', 'tts_a', 'concurrent_limit'],
      );
    });

    it('concurrent_limit 0 is greater_than_equal', async () => {
      expectValidation(
        await putConcurrency(admin.headers, { stt: { stt_a: { enabled: true, concurrent_limit: 0 } } }),
        ['body', 'stt', 'stt_a', 'concurrent_limit'],
        'greater_than_equal',
      );
    });

    it('a limit without enabled or concurrent_limit, or with another field', async () => {
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { concurrent_limit: 2 } } }),
        ['body', 'tts', 'tts_a', 'enabled'],
        'missing',
      );
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: true } } }),
        ['body', 'tts', 'tts_a', 'concurrent_limit'],
        'missing',
      );
      expectValidation(
        await putConcurrency(admin.headers, {
          tts: { tts_a: { enabled: true, concurrent_limit: 2, burst: 3 } },
        }),
        ['body', 'tts', 'tts_a', 'burst'],
        'extra_forbidden',
      );
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: 'yes', concurrent_limit: 2 } } }),
        ['body', 'tts', 'tts_a', 'enabled'],
      );
      expectValidation(await putConcurrency(admin.headers, { tts: [] }), ['body', 'tts']);
    });

    it('a valid map next to an invalid one is not applied either', async () => {
      expectValidation(
        await putConcurrency(admin.headers, {
          tts: { tts_b: { enabled: true, concurrent_limit: 9 } },
          stt: { stt_a: { enabled: true, concurrent_limit: 0 } },
        }),
        ['body', 'stt', 'stt_a', 'concurrent_limit'],
      );
    });

    it('left the settings as they were', async () => {
      expect((await getConcurrency(admin.headers)).json()).toEqual(stable);
    });
  });

  describe('who may read and change them', () => {
    it('401 without credentials on GET and PUT', async () => {
      expect((await getConcurrency({})).statusCode).toBe(401);
      const put = await putConcurrency({}, { tts: {} });
      expect(put.statusCode).toBe(401);
      expect(typeof put.json().detail).toBe('string');
    });

    it('a member who is not an admin may read (200) but not change them (403)', async () => {
      const admin = await f.user();
      const settings = { tts: { tts_a: { enabled: true, concurrent_limit: 4 } }, stt: {} };
      expect((await putConcurrency(admin.headers, settings)).statusCode).toBe(200);
      const member = await f.member(admin.organizationId, 'user');
      const read = await getConcurrency(member.headers);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(settings);
      const write = await putConcurrency(member.headers, { tts: {}, stt: {} });
      expect(write.statusCode, write.body).toBe(403);
      expect(write.json().detail).toMatch(/admin/i);
      expect((await getConcurrency(admin.headers)).json()).toEqual(settings);
    });

    it('API keys: no organization area → 403; read → GET only; read_write of an admin → PUT', async () => {
      const admin = await f.user();
      const none = await f.apiKey(admin, { permissions: { sms: 'read_write' } });
      const read = await f.apiKey(admin, { permissions: { organization: 'read' } });
      const write = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
      const settings = { tts: {}, stt: { stt_a: { enabled: true, concurrent_limit: 2 } } };

      expect((await getConcurrency(none.headers)).statusCode).toBe(403);
      expect((await putConcurrency(none.headers, settings)).statusCode).toBe(403);
      expect((await getConcurrency(read.headers)).statusCode).toBe(200);
      expect((await putConcurrency(read.headers, settings)).statusCode).toBe(403);
      expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: {}, stt: {} });
      const written = await putConcurrency(write.headers, settings);
      expect(written.statusCode, written.body).toBe(200);
      expect((await getConcurrency(admin.headers)).json()).toEqual(settings);
    });
  });
});
