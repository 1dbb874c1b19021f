/**
 * The after-call analysis of a call, from its final status on: the row and the delayed job written in
 * the transaction that ends the call; the job run as the queue runs it (completed once, retried after
 * a model failure, failed with its reason on the last try or at once when no model can answer,
 * skipped when nothing was said); what it leaves behind — GET /calls/{id}/analysis and the call's
 * `analysis`, the export's columns, the `call.analyzed` webhook's delivery, a campaign execution's
 * `voice_analytics`. Workers are off: each job attempt is run by the test, as the queue would run it
 * (its retry count given), so retries need no waiting for back-off.
 */

import { parse } from 'csv-parse/sync';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  calls,
  campaignExecutions,
  type TranscriptSpeaker,
  webhookDeliveries,
} from '../src/db/schema/index.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { expectError } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { addContacts, addExecutions, ownCampaign } from './support/campaign-seed.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const llm = new LlmSimulator();
beforeAll(() => llm.start());
const t = useTestPlatform(() => ({ LLM_A_BASE_URL: llm.baseUrl }), { workers: false });
afterAll(() => llm.stop());

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string' }, account_number: { type: 'integer' } },
  required: ['name', 'account_number'],
  additionalProperties: false,
};
const TALK: Array<[TranscriptSpeaker, string]> = [
  ['assistant', 'Hello, how can I help?'],
  ['user', 'My name is Ada Lovelace and my account number is 4 4 7 1.'],
  ['assistant', 'Thank you, I have found your account.'],
  ['user', 'Thanks, that is great'],
];
const HOOK = 'http://127.0.0.1:9/analysis-hook';

let serial = 0;

interface Org {
  user: TestUser;
  assistantId: number;
  key: string;
}

/** An organization with a language model key the simulator knows, and an assistant. */
async function organization(assistant: Record<string, unknown> = {}, withKey = true): Promise<Org> {
  const n = ++serial;
  const f = new Factories(t);
  const user = await f.user();
  const key = `analysis-key-${n}`;
  if (withKey) {
    llm.addKey(key);
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: user.headers,
      payload: { api_keys: { llm_a: { api_key: key } } },
    });
    expectStatus(put, 200);
  }
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `Analyst ${n}`, ...assistant },
  });
  expectStatus(created, 201);
  return { user, assistantId: created.json().id, key };
}

/** A call of `org` that was under way, with what was said, ended by the carrier's final status. */
async function endedCall(
  org: Org,
  transcript: Array<[TranscriptSpeaker, string]> = TALK,
  status: 'completed' | 'busy' = 'completed',
) {
  const call = await seedCall(t.database, org.user.organizationId, {
    assistantId: org.assistantId,
    status: 'in-progress',
    duration: null,
    endedAt: null,
    transcript,
  });
  await t.platform.services.calls.applyStatus(org.user.organizationId, call.id, {
    kind: 'call_status',
    callSid: call.callSid!,
    status,
    durationSeconds: status === 'completed' ? 30 : 0,
  });
  return call;
}

/** One attempt of the call's `call.analyze` job, as the queue runs it. */
function attempt(org: Org, callId: number, retryCount = 0) {
  return t.platform.services.analysis.run(
    { call_id: callId, organization_id: org.user.organizationId },
    { retryCount },
  );
}

function getAnalysis(callId: number, headers?: Record<string, string>) {
  return t.app.inject({ method: 'GET', url: `/api/v1/calls/${callId}/analysis`, headers });
}

async function analysisJobs(callId: number) {
  const { rows } = await t.database.executeSql(
    `select extract(epoch from start_after - created_on)::float as delay from pgboss.job
      where name = 'call.analyze' and (data->>'call_id')::int = $1`,
    [callId],
  );
  return rows as Array<{ delay: number }>;
}

describe('the job', () => {
  let org: Org;
  let callId: number;

  beforeAll(async () => {
    org = await organization({
      webhook_url: HOOK,
      custom_settings: {
        structured_data_prompt: 'Extract the caller’s name and account number.',
        structured_data_schema: SCHEMA,
      },
    });
    callId = (await endedCall(org)).id;
  });

  it('is enqueued with the final status, starting seconds later, the row pending meanwhile', async () => {
    expect(await analysisJobs(callId)).toEqual([{ delay: expect.closeTo(5, 0) }]);
    const pending = await getAnalysis(callId, org.user.headers);
    expect(pending.statusCode, pending.body).toBe(200);
    expect(pending.json()).toMatchObject({
      call_id: callId,
      status: 'pending',
      summary: null,
      completed_at: null,
    });
  });

  it('completes once: summary, sentiment and schema-valid structured data, one webhook', async () => {
    const before = llm.analysisRequests.length;
    await attempt(org, callId);
    const response = await getAnalysis(callId, org.user.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      call_id: callId,
      status: 'completed',
      summary: `The caller said: "${TALK[1]![1]} ${TALK[3]![1]}".`,
      sentiment: 'positive',
      sentiment_score: 1,
      structured_data: { name: 'Ada Lovelace', account_number: 4471 },
      structured_data_valid: true,
      structured_data_error: null,
      provider: 'llm_a',
      error: null,
      created_at: expect.any(String),
      completed_at: expect.any(String),
    });
    const asked = llm.analysisRequests.slice(before);
    expect(asked.map((r) => [r.key, r.analysis?.task])).toEqual([
      [org.key, 'summary'],
      [org.key, 'structured'],
    ]);
    // The transcript went to the model; the schema and prompt with the structured request.
    expect(JSON.stringify(asked[0]!.messages)).toContain('Caller: My name is Ada Lovelace');
    expect(asked[1]!.analysis?.schema).toEqual(SCHEMA);

    // Run again (a redelivered job): nothing more is asked, written or sent.
    await attempt(org, callId);
    expect(llm.analysisRequests.length).toBe(before + 2);
    const deliveries = await t.database.db
      .select()
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.eventType, 'call.analyzed'), eq(webhookDeliveries.url, HOOK)));
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.payload).toMatchObject({
      type: 'call.analyzed',
      organization_id: org.user.organizationId,
      data: {
        call_id: callId,
        assistant_id: org.assistantId,
        campaign_id: null,
        summary: response.json().summary,
        sentiment: 'positive',
        sentiment_score: 1,
        structured_data: { name: 'Ada Lovelace', account_number: 4471 },
        structured_data_valid: true,
        structured_data_error: null,
      },
    });
  });

  it('shows on the call itself, and not in lists', async () => {
    const one = await t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${callId}`,
      headers: org.user.headers,
    });
    expect(one.statusCode).toBe(200);
    expect(one.json().analysis).toMatchObject({ status: 'completed', sentiment: 'positive' });
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/calls', headers: org.user.headers });
    expect(list.json()[0]).not.toHaveProperty('analysis');
    const running = await seedCall(t.database, org.user.organizationId, { status: 'in-progress' });
    const live = await t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${running.id}`,
      headers: org.user.headers,
    });
    expect(live.json().analysis).toBeNull();
  });

  it('is in the export: the four columns after the document’s, and the JSON keys', async () => {
    const csv = await t.app.inject({ method: 'GET', url: '/api/v1/calls/export', headers: org.user.headers });
    expect(csv.statusCode).toBe(200);
    const rows = parse(csv.body) as string[][];
    expect(rows[0]!.slice(-5)).toEqual([
      'Ended At',
      'Summary',
      'Sentiment',
      'Sentiment Score',
      'Structured Data',
    ]);
    const row = rows.find((r) => r[0] === String(callId))!;
    expect(row.slice(-4)).toEqual([
      `The caller said: "${TALK[1]![1]} ${TALK[3]![1]}".`,
      'positive',
      '1',
      '{"name":"Ada Lovelace","account_number":4471}',
    ]);
    // The call still under way has empty analysis cells.
    expect(rows.at(-1)!.slice(-4)).toEqual(['', '', '', '']);
    const json = await t.app.inject({
      method: 'GET',
      url: '/api/v1/calls/export?format=json',
      headers: org.user.headers,
    });
    const exported = (json.json() as Array<Record<string, unknown>>).find((c) => c.id === callId);
    expect(Object.keys(exported!).slice(-4)).toEqual([
      'summary',
      'sentiment',
      'sentiment_score',
      'structured_data',
    ]);
    expect(exported).toMatchObject({
      sentiment: 'positive',
      sentiment_score: 1,
      structured_data: { name: 'Ada Lovelace', account_number: 4471 },
    });
  });

  it('neutralises a formula in the exported analysis', async () => {
    const sly = await organization();
    const call = await endedCall(sly, [['user', 'Please write a formula in my summary']]);
    const summary = '=HYPERLINK("http://evil.example","open")';
    llm.setAnalysisScript(sly.key, 'summary', [
      { text: JSON.stringify({ summary, sentiment: 'neutral', sentiment_score: 0 }) },
    ]);
    await attempt(sly, call.id);
    const csv = await t.app.inject({ method: 'GET', url: '/api/v1/calls/export', headers: sly.user.headers });
    const [, row] = parse(csv.body) as string[][];
    expect(row!.slice(-4)).toEqual([`'${summary}`, 'neutral', '0', '']);
  });

  it('fails an attempt on a model 500 (the queue retries it), and succeeds at the next', async () => {
    const call = await endedCall(org);
    llm.setAnalysisScript(org.key, 'summary', [{ error: { status: 500 } }]);
    await expect(attempt(org, call.id, 0)).rejects.toThrow(/500|server/i);
    expect((await getAnalysis(call.id, org.user.headers)).json().status).toBe('pending');
    await attempt(org, call.id, 1);
    expect((await getAnalysis(call.id, org.user.headers)).json()).toMatchObject({
      status: 'completed',
      structured_data_valid: true,
    });
  });

  it('leaves the row failed, with the reason, when the last try fails', async () => {
    const call = await endedCall(org);
    llm.setAnalysisScript(org.key, 'summary', [
      { error: { status: 503, message: 'The model is overloaded' } },
    ]);
    await attempt(org, call.id, 3);
    const failed = (await getAnalysis(call.id, org.user.headers)).json();
    expect(failed).toMatchObject({ status: 'failed', summary: null, completed_at: expect.any(String) });
    expect(failed.error).toMatch(/llm_a \(organization key\): .*overloaded/);
  });

  it('keeps invalid structured data beside its error after the corrective retry', async () => {
    const call = await endedCall(org);
    llm.setAnalysisScript(org.key, 'structured', [{ text: '{"name": 1}' }, { text: '{"name": "Ada"}' }]);
    await attempt(org, call.id);
    expect((await getAnalysis(call.id, org.user.headers)).json()).toMatchObject({
      status: 'completed',
      sentiment: 'positive',
      structured_data: { name: 'Ada' },
      structured_data_valid: false,
      structured_data_error: expect.stringMatching(/required property 'account_number'/),
    });
  });
});

describe('calls without a conversation, or without a model', () => {
  it('skips a call that was never answered, with no job', async () => {
    const org = await organization();
    const call = await endedCall(org, [], 'busy');
    expect(await analysisJobs(call.id)).toEqual([]);
    expect((await getAnalysis(call.id, org.user.headers)).json()).toMatchObject({
      status: 'skipped',
      error: 'the call was not answered (busy)',
    });
  });

  it('skips a call where the caller said nothing, asking no model', async () => {
    const org = await organization();
    const call = await endedCall(org, [['assistant', 'Hello? Is anyone there?']]);
    const before = llm.analysisRequests.length;
    await attempt(org, call.id);
    expect(llm.analysisRequests.length).toBe(before);
    expect((await getAnalysis(call.id, org.user.headers)).json()).toMatchObject({
      status: 'skipped',
      error: 'the caller said nothing',
    });
  });

  it('fails at once, without retries, when no model can be used', async () => {
    const org = await organization({}, false);
    const call = await endedCall(org);
    await attempt(org, call.id, 0);
    expect((await getAnalysis(call.id, org.user.headers)).json()).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/no language model can be used/),
    });
  });
});

describe('a campaign call', () => {
  it('gives its execution voice_analytics.sentiment_score and summary', async () => {
    const f = new Factories(t);
    const org = await organization();
    const { campaignId } = await ownCampaign(t, f, org.user);
    const [contact] = await addContacts(t, org.user, campaignId, ['in_progress']);
    const call = await seedCall(t.database, org.user.organizationId, {
      assistantId: org.assistantId,
      status: 'in-progress',
      duration: null,
      endedAt: null,
      transcript: [['user', 'This is terrible, the package arrived damaged.']],
    });
    await t.database.db.update(calls).set({ campaignId }).where(eq(calls.id, call.id));
    const [executionId] = await addExecutions(t, org.user, campaignId, [
      { contactId: contact!.id, attemptNumber: 1, channel: 'call', status: 'in_progress', callId: call.id },
    ]);
    await t.platform.services.calls.applyStatus(org.user.organizationId, call.id, {
      kind: 'call_status',
      callSid: call.callSid!,
      status: 'completed',
      durationSeconds: 20,
    });
    await attempt(org, call.id);
    const [execution] = await t.database.db
      .select()
      .from(campaignExecutions)
      .where(eq(campaignExecutions.id, executionId!));
    expect(execution!.status).toBe('completed');
    expect(execution!.executionData).toMatchObject({
      duration_seconds: 20,
      voice_analytics: {
        sentiment_score: -1,
        sentiment: 'negative',
        summary: 'The caller said: "This is terrible, the package arrived damaged.".',
      },
    });
  });
});

describe('GET /api/v1/calls/{call_id}/analysis', () => {
  let org: Org;
  let callId: number;

  beforeAll(async () => {
    org = await organization();
    callId = (await endedCall(org)).id;
  });

  it('answers 404 while the call is under way, and for a call that does not exist', async () => {
    const running = await seedCall(t.database, org.user.organizationId, { status: 'in-progress' });
    expectError(await getAnalysis(running.id, org.user.headers), 404, /not ended yet/);
    expectError(await getAnalysis(2_000_000_000, org.user.headers), 404, /Call not found/);
  });

  it('refuses a call id that is no id', async () => {
    const response = await getAnalysis(0, org.user.headers);
    expect(response.statusCode).toBe(422);
    expect(
      (await t.app.inject({ method: 'GET', url: '/api/v1/calls/abc/analysis', headers: org.user.headers }))
        .statusCode,
    ).toBe(422);
  });

  it('answers 404 for another organization’s call', async () => {
    const other = await organization();
    expectError(await getAnalysis(callId, other.user.headers), 404, /Call not found/);
  });

  it('answers 401 without credentials and 403 to an API key without the calls area', async () => {
    expectError(await getAnalysis(callId), 401);
    const f = new Factories(t);
    const smsOnly = await f.apiKey(org.user, { permissions: { sms: 'read_write' } });
    expectError(await getAnalysis(callId, smsOnly.headers), 403);
    const reader = await f.apiKey(org.user, { permissions: { calls: 'read' } });
    const allowed = await getAnalysis(callId, reader.headers);
    expect(allowed.statusCode, allowed.body).toBe(200);
    expect(allowed.json().status).toBe('pending');
  });

  it('is scoped in SQL too: the row belongs to the call’s organization', async () => {
    const { rows } = await t.database.executeSql(
      'select organization_id from call_analyses where call_id = $1',
      [callId],
    );
    expect(rows).toEqual([{ organization_id: org.user.organizationId }]);
  });
});
