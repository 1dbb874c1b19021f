/**
 * The turns of a call: `CallRecords.recordTurn` (the store function the live runtime calls at the end
 * of each turn) and GET /api/v1/calls/{id}/turns — every field read back in turn order, a call under
 * way showing its turns so far, input the store refuses, and who may see what (as the transcript).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { ValidationFailed } from '../src/domains/errors.js';
import { measure, type TurnMarks, type TurnRecord } from '../src/voice/turn-metrics.js';
import { expectError, expectValidation } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

// The tests share one database; each makes its own calls.
const t = useTestPlatform();
let f: Factories;
let owner: TestUser;
let tenant: Tenant;

beforeAll(async () => {
  f = new Factories(t);
  owner = await f.user();
  tenant = new Tenant(owner.organizationId);
});

function get(url: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'GET', url, headers });
}

/** A turn with its measurements derived from `marks`, as the runtime builds it. */
function turn(position: number, fields: Partial<TurnRecord> & { marks?: TurnMarks } = {}): TurnRecord {
  const marks = fields.marks ?? {};
  return {
    position,
    kind: 'reply',
    startedAt: new Date(Date.UTC(2026, 10, 20, 10, 0, position)),
    userText: `question ${position}`,
    assistantText: `answer ${position}`,
    interrupted: false,
    llmProvider: 'llm_a',
    ...fields,
    marks,
    measurements: fields.measurements ?? measure(marks),
  };
}

const REPLY_MARKS: TurnMarks = {
  callerSpeechStartedAt: 1000.04,
  callerSpeechEndedAt: 2500.26,
  sttFinalAt: 2640.71,
  turnEndDecidedAt: 3000.5,
  llmRequestAt: 3001.2,
  llmFirstTokenAt: 3310.86,
  firstSentenceAt: 3402,
  ttsRequestAt: 3403.1,
  ttsFirstByteAt: 3590.3,
  firstAudioSentAt: 3601.9,
  firstMarkPlayedAt: 3700.16,
};

describe('GET /api/v1/calls/{id}/turns', () => {
  it('reads back the recorded turns in order with every field', async () => {
    const call = await seedCall(t.database, owner.organizationId);
    const records = t.platform.services.callRecords;
    // Recorded out of order: the answer follows position, not arrival.
    const reply = turn(1, {
      userText: 'I would like a refund.',
      assistantText: 'Of course, let me',
      interrupted: true,
      marks: REPLY_MARKS,
    });
    const greeting = turn(0, {
      kind: 'greeting',
      userText: '',
      assistantText: 'Hello, how can I help?',
      llmProvider: null,
      marks: { ttsRequestAt: 12.34, ttsFirstByteAt: 160.06, firstAudioSentAt: 171.5 },
    });
    const stored = await records.recordTurn(tenant, call.id, reply);
    expect(stored).toMatchObject({ position: 1, callId: call.id, endToEndMs: 1102 });
    await records.recordTurn(tenant, call.id, greeting);
    await records.recordTurn(tenant, call.id, turn(2, { kind: 'goodbye', llmProvider: 'llm_b' }));

    const response = await get(`/api/v1/calls/${call.id}/turns`, owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.map((each: { position: number }) => each.position)).toEqual([0, 1, 2]);
    expect(body[0]).toEqual({
      position: 0,
      kind: 'greeting',
      started_at: '2026-11-20T10:00:00.000Z',
      user_text: '',
      assistant_text: 'Hello, how can I help?',
      interrupted: false,
      llm_provider: null,
      end_to_end_ms: null,
      endpointing_ms: null,
      stt_delay_ms: null,
      llm_ttft_ms: null,
      tts_ttfb_ms: 148,
      platform_ms: null,
      retrieval_ms: null,
      passages: null,
      marks: { tts_request_at: 12.3, tts_first_byte_at: 160.1, first_audio_sent_at: 171.5 },
    });
    // end-to-end 1101.64 → 1102; endpointing 500.24 → 500; STT 140.45 → 140; TTFT 309.66 → 310;
    // TTFB 187.2 → 187; platform-added 1101.64 − 500.24 − 309.66 − 187.2 = 104.54 → 105.
    expect(body[1]).toEqual({
      position: 1,
      kind: 'reply',
      started_at: '2026-11-20T10:00:01.000Z',
      user_text: 'I would like a refund.',
      assistant_text: 'Of course, let me',
      interrupted: true,
      llm_provider: 'llm_a',
      end_to_end_ms: 1102,
      endpointing_ms: 500,
      stt_delay_ms: 140,
      llm_ttft_ms: 310,
      tts_ttfb_ms: 187,
      platform_ms: 105,
      retrieval_ms: null,
      passages: null,
      marks: {
        caller_speech_started_at: 1000,
        caller_speech_ended_at: 2500.3,
        stt_final_at: 2640.7,
        turn_end_decided_at: 3000.5,
        llm_request_at: 3001.2,
        llm_first_token_at: 3310.9,
        first_sentence_at: 3402,
        tts_request_at: 3403.1,
        tts_first_byte_at: 3590.3,
        first_audio_sent_at: 3601.9,
        first_mark_played_at: 3700.2,
      },
    });
    expect(body[2]).toMatchObject({ position: 2, kind: 'goodbye', llm_provider: 'llm_b', marks: {} });

    // A call with no turns answers an empty list.
    const silent = await seedCall(t.database, owner.organizationId);
    expect((await get(`/api/v1/calls/${silent.id}/turns`, owner.headers)).json()).toEqual([]);
  });

  it('shows the turns so far while the call is under way, and a retried write replaces its turn', async () => {
    const call = await seedCall(t.database, owner.organizationId, {
      status: 'in-progress',
      endedAt: null,
      duration: null,
    });
    const records = t.platform.services.callRecords;
    await records.recordTurn(tenant, call.id, turn(0, { kind: 'greeting', llmProvider: null }));
    const first = await get(`/api/v1/calls/${call.id}/turns`, owner.headers);
    expect(first.json().map((each: { kind: string }) => each.kind)).toEqual(['greeting']);

    await records.recordTurn(tenant, call.id, turn(1, { assistantText: 'first write' }));
    await records.recordTurn(tenant, call.id, turn(1, { assistantText: 'second write', kind: 'idle' }));
    const second = (await get(`/api/v1/calls/${call.id}/turns`, owner.headers)).json();
    expect(second).toHaveLength(2);
    expect(second[1]).toMatchObject({ position: 1, kind: 'idle', assistant_text: 'second write' });
    const stillLive = (await get(`/api/v1/calls/${call.id}`, owner.headers)).json();
    expect(stillLive.status).toBe('in-progress');
  });

  it('refuses turns the store cannot hold, and another organization’s call', async () => {
    const call = await seedCall(t.database, owner.organizationId);
    const records = t.platform.services.callRecords;
    const refusals: Array<[Partial<TurnRecord>, string[]]> = [
      [{ position: -1 }, ['turn', 'position']],
      [{ position: 1.5 }, ['turn', 'position']],
      [{ kind: 'chat' as TurnRecord['kind'] }, ['turn', 'kind']],
      [{ startedAt: new Date(Number.NaN) }, ['turn', 'started_at']],
      [{ userText: 'x'.repeat(10_001) }, ['turn', 'user_text']],
      [{ assistantText: 'x'.repeat(10_001) }, ['turn', 'assistant_text']],
      [{ llmProvider: 'p'.repeat(101) }, ['turn', 'llm_provider']],
      [{ measurements: { ...measure({}), endToEndMs: -1 } }, ['turn', 'measurements', 'endToEndMs']],
      [{ measurements: { ...measure({}), llmTtftMs: Number.NaN } }, ['turn', 'measurements', 'llmTtftMs']],
      [{ marks: { sttFinalAt: Number.POSITIVE_INFINITY } }, ['turn', 'marks', 'sttFinalAt']],
    ];
    for (const [fields, loc] of refusals) {
      const attempt = records.recordTurn(tenant, call.id, turn(1, fields));
      await expect(attempt, JSON.stringify(loc)).rejects.toBeInstanceOf(ValidationFailed);
      await attempt.catch((error: ValidationFailed) => expect(error.issues[0]!.loc).toEqual(loc));
    }
    // Exactly the limits are accepted.
    await records.recordTurn(
      tenant,
      call.id,
      turn(2, { userText: 'x'.repeat(10_000), llmProvider: 'p'.repeat(100) }),
    );

    const stranger = await f.user();
    expect(await records.recordTurn(new Tenant(stranger.organizationId), call.id, turn(3))).toBeUndefined();
    const turns = (await get(`/api/v1/calls/${call.id}/turns`, owner.headers)).json();
    expect(turns.map((each: { position: number }) => each.position)).toEqual([2]);
  });

  it('answers 422 for a bad id and 404 for an unknown call or another organization’s', async () => {
    const call = await seedCall(t.database, owner.organizationId);
    await t.platform.services.callRecords.recordTurn(tenant, call.id, turn(0, { userText: 'private words' }));
    expectValidation(await get('/api/v1/calls/abc/turns', owner.headers), ['path', 'call_id']);
    expectValidation(await get('/api/v1/calls/0/turns', owner.headers), ['path', 'call_id']);
    expectError(await get('/api/v1/calls/2147483647/turns', owner.headers), 404, /Call not found/);
    const stranger = await f.user();
    const theirs = await get(`/api/v1/calls/${call.id}/turns`, stranger.headers);
    expectError(theirs, 404, /Call not found/);
    expect(theirs.body).not.toContain('private words');
  });

  it('refuses without credentials (401) and API keys without the calls area (403), as the transcript', async () => {
    const call = await seedCall(t.database, owner.organizationId);
    await t.platform.services.callRecords.recordTurn(tenant, call.id, turn(0));
    const url = `/api/v1/calls/${call.id}/turns`;
    expectError(await get(url), 401);
    expectError(await get(url, { authorization: 'Bearer sk_not_a_key' }), 401);
    const smsOnly = await f.apiKey(owner, { permissions: { sms: 'read_write' } });
    expectError(await get(url, smsOnly.headers), 403);
    expectError(await get(`/api/v1/calls/${call.id}/transcript`, smsOnly.headers), 403);

    // Members of any role and keys that may read calls see the turns.
    const member = await f.member(owner.organizationId, 'user');
    const callsReader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    for (const headers of [member.headers, callsReader.headers]) {
      const response = await get(url, headers);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toHaveLength(1);
    }
  });
});
