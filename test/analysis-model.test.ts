/**
 * The after-call analysis, below the job: answers read tolerantly and clamped; the structured data
 * validated against the schema with one corrective retry; candidates tried in turn; and the language
 * model simulator's analysis answers — recognised by their task marker, summaries from the caller's
 * words, structured data generated from the schema — through the real adapters of both dialects.
 */
import { Ajv } from 'ajv';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { askModel, ModelFailed } from '../src/domains/analysis/model.js';
import { extractJson, readSummaryAnswer } from '../src/domains/analysis/parse.js';
import { summaryMessages, type TranscriptLine } from '../src/domains/analysis/prompts.js';
import { extractStructured, structuredSettingsOf } from '../src/domains/analysis/structured.js';
import { llmAdapterFor } from '../src/providers/llm/index.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { generate, summaryOf } from '../src/sim/llm-analysis.js';
import { contentText } from '../src/sim/llm-messages.js';
import type { LlmCandidate } from '../src/voice/vendors.js';

describe('reading the summary answer', () => {
  it('finds the JSON in a bare answer, a code fence, or prose around it', () => {
    const object = { summary: 'A booking.', sentiment: 'positive', sentiment_score: 0.5 };
    const json = JSON.stringify(object);
    for (const text of [
      json,
      `\`\`\`json\n${json}\n\`\`\``,
      `Here is the analysis:\n${json}\nHope it helps.`,
    ])
      expect(extractJson(text)).toEqual({ ok: true, value: object });
    expect(extractJson('')).toEqual({ ok: false, error: 'the answer was empty' });
    expect(extractJson('I cannot help with that.')).toEqual({ ok: false, error: 'the answer held no JSON' });
  });

  it('clamps the score, completes a missing label or score, and trims the summary', () => {
    expect(readSummaryAnswer('{"summary":"  Fine.  ","sentiment":"Positive","sentiment_score":3}')).toEqual({
      summary: 'Fine.',
      sentiment: 'positive',
      sentimentScore: 1,
    });
    expect(readSummaryAnswer('{"summary":"x","sentiment_score":"-0.8"}')).toEqual({
      summary: 'x',
      sentiment: 'negative',
      sentimentScore: -0.8,
    });
    expect(readSummaryAnswer('{"summary":"x","sentiment":"neutral"}')).toEqual({
      summary: 'x',
      sentiment: 'neutral',
      sentimentScore: 0,
    });
    expect(readSummaryAnswer('{"summary":"x","sentiment":"ecstatic","sentiment_score":0.1}')).toMatchObject({
      sentiment: 'neutral',
      sentimentScore: 0.1,
    });
    const long = readSummaryAnswer(JSON.stringify({ summary: 'a'.repeat(5000), sentiment: 'neutral' }));
    expect('summary' in long && long.summary.length).toBe(4000);
  });

  it('says why an answer is unusable', () => {
    expect(readSummaryAnswer('[1, 2]')).toEqual({ error: 'the answer was not a JSON object' });
    expect(readSummaryAnswer('{"sentiment":"positive"}')).toEqual({ error: 'the answer had no summary' });
    expect(readSummaryAnswer('{"summary":"x","sentiment_score":"high"}')).toEqual({
      error: 'the answer had no sentiment',
    });
    expect(readSummaryAnswer('no json here')).toEqual({ error: 'the answer held no JSON' });
  });

  it('reads structured data settings only when a prompt or a schema is set', () => {
    expect(structuredSettingsOf(undefined)).toBeUndefined();
    expect(structuredSettingsOf({})).toBeUndefined();
    expect(structuredSettingsOf({ structured_data_prompt: '  ' })).toBeUndefined();
    expect(structuredSettingsOf({ structured_data_prompt: 'Name?' })).toEqual({ prompt: 'Name?' });
    expect(structuredSettingsOf({ structured_data_schema: { type: 'object' } })).toEqual({
      schema: { type: 'object' },
    });
  });
});

describe("the simulator's answers", () => {
  const ajv = new Ajv({ strict: false, allErrors: true });

  it('summarises the caller’s words and counts the sentiment from them', () => {
    expect(summaryOf(['Thanks, that is great', 'Perfect'])).toEqual({
      summary: 'The caller said: "Thanks, that is great Perfect".',
      sentiment: 'positive',
      sentiment_score: 1,
    });
    expect(summaryOf(['This is terrible, I want a refund', 'Thanks anyway'])).toMatchObject({
      sentiment: 'negative',
      sentiment_score: -0.33,
    });
    expect(summaryOf(['I would like to book an appointment'])).toMatchObject({
      sentiment: 'neutral',
      sentiment_score: 0,
    });
  });

  it('generates schema-valid data, with values where the caller named the property', () => {
    const schema = {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1 },
        account_number: { type: 'integer', minimum: 0 },
        plan: { type: 'string', enum: ['basic', 'premium', 'family'] },
        callback: { type: 'boolean' },
        email: { type: 'string', format: 'email' },
        mood: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1 },
        nested: {
          type: 'object',
          properties: { score: { type: 'number', maximum: 10 } },
          required: ['score'],
        },
      },
      required: ['name', 'account_number', 'plan', 'callback', 'email', 'tags', 'nested'],
    };
    const caller = ['My name is Ada Lovelace, and my account number is 4 4 7 1.', 'The premium plan please.'];
    const value = generate(schema, [], caller) as Record<string, unknown>;
    expect(ajv.validate(schema, value), ajv.errorsText()).toBe(true);
    expect(value).toMatchObject({
      name: 'Ada Lovelace',
      account_number: 4471,
      plan: 'premium',
      email: 'caller@example.com',
      nested: { score: 0 },
    });
    // Optional and never spoken of: left out.
    expect(value).not.toHaveProperty('mood');
  });

  it('keeps to enums, consts, bounds and nullable types whatever the transcript says', () => {
    const schema = {
      type: 'object',
      properties: {
        count: { type: ['integer', 'null'], minimum: 5, maximum: 9 },
        kind: { const: 'call' },
        level: { enum: [1, 2, 3] },
        either: { anyOf: [{ type: 'string', maxLength: 3 }, { type: 'number' }] },
      },
      required: ['count', 'kind', 'level', 'either'],
      additionalProperties: false,
    };
    const value = generate(schema, [], ['The count is 42 and either way is fine']);
    expect(ajv.validate(schema, value), ajv.errorsText()).toBe(true);
    expect(value).toEqual({ count: 9, kind: 'call', level: 1, either: 'way' });
  });
});

describe('asking the model, through the simulator', () => {
  const llm = new LlmSimulator();
  const lines: TranscriptLine[] = [
    { speaker: 'assistant', text: 'Hello, how can I help?' },
    { speaker: 'user', text: 'My name is Grace Hopper and I am very happy with the service, thanks.' },
  ];
  const candidate = (provider: string, apiKey: string): LlmCandidate => ({
    provider,
    apiKey,
    baseUrl: llm.baseUrl,
    model: 'sim-model',
    label: `${apiKey} key`,
  });
  const options = { adapterFor: llmAdapterFor, timeoutMs: 5000 };

  beforeAll(async () => {
    await llm.start();
    for (const key of ['k-a', 'k-b', 'k-c']) llm.addKey(key);
  });
  beforeEach(() => llm.reset());
  afterAll(() => llm.stop());

  it('answers the summary task in both dialects, recorded apart from conversations', async () => {
    for (const provider of ['llm_a', 'llm_b']) {
      const answer = await askModel([candidate(provider, 'k-a')], summaryMessages(lines), options);
      expect(answer.provider).toBe(provider);
      expect(readSummaryAnswer(answer.text)).toEqual({
        summary: `The caller said: "${lines[1]!.text}".`,
        sentiment: 'positive',
        sentimentScore: 1,
      });
    }
    expect(llm.requests).toHaveLength(0);
    expect(llm.analysisRequests.map((r) => [r.dialect, r.analysis?.task])).toEqual([
      ['openai-chat', 'summary'],
      ['messages', 'summary'],
    ]);
  });

  it('hands over to the next candidate when one fails or answers nothing usable', async () => {
    llm.setAnalysisScript('k-a', 'summary', [{ error: { status: 500 } }]);
    llm.setAnalysisScript('k-b', 'summary', [{ text: 'Sorry, no JSON from me.' }]);
    const accept = (text: string) => {
      const read = readSummaryAnswer(text);
      return 'error' in read ? read.error : undefined;
    };
    const answer = await askModel(
      [candidate('llm_a', 'k-a'), candidate('llm_b', 'k-b'), candidate('llm_a', 'k-c')],
      summaryMessages(lines),
      { ...options, accept },
    );
    expect(answer.provider).toBe('llm_a');
    expect(llm.analysisRequests.map((r) => r.key)).toEqual(['k-a', 'k-b', 'k-c']);
  });

  it('fails permanently when every key is refused, retryably when one failed for a while', async () => {
    const refused = askModel([candidate('llm_a', 'unknown-key')], summaryMessages(lines), options);
    await expect(refused).rejects.toMatchObject({ name: 'ModelFailed', permanent: true });
    llm.setAnalysisScript('k-a', 'summary', [{ error: { status: 503 } }]);
    const busy = askModel(
      [candidate('llm_a', 'k-a'), candidate('llm_a', 'unknown-key')],
      summaryMessages(lines),
      options,
    );
    await expect(busy).rejects.toMatchObject({ permanent: false });
    await expect(askModel([], summaryMessages(lines), options)).rejects.toBeInstanceOf(ModelFailed);
  });

  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, satisfied: { type: 'boolean' } },
    required: ['name', 'satisfied'],
    additionalProperties: false,
  };
  const ask = (key: string) => (messages: ReturnType<typeof summaryMessages>) =>
    askModel([candidate('llm_b', key)], messages, options);

  it('extracts schema-valid structured data at the first answer', async () => {
    const outcome = await extractStructured(ask('k-a'), lines, { prompt: 'The caller’s name.', schema });
    expect(outcome).toEqual({
      data: { name: 'Grace Hopper', satisfied: false },
      error: null,
      provider: 'llm_b',
    });
    const [request] = llm.analysisRequests;
    expect(request?.analysis).toMatchObject({ task: 'structured', schema, correction: false });
    expect(String(request?.body?.system)).toContain('The caller’s name.');
  });

  it('asks once more, with the errors, after an invalid answer', async () => {
    llm.setAnalysisScript('k-a', 'structured', [{ text: '{"name": 7}' }]);
    const outcome = await extractStructured(ask('k-a'), lines, { schema });
    expect(outcome).toMatchObject({ data: { name: 'Grace Hopper' }, error: null });
    expect(llm.analysisRequests).toHaveLength(2);
    const retry = llm.analysisRequests[1]!;
    expect(retry.analysis?.correction).toBe(true);
    const last = contentText(retry.messages.at(-1)?.content);
    expect(last).toMatch(/not valid: .*data\/name must be string/);
    expect(last).toMatch(/must have required property 'satisfied'/);
  });

  it('keeps what the model returned beside the error when the retry is invalid too', async () => {
    llm.setAnalysisScript('k-a', 'structured', [{ text: 'not json at all' }, { text: '{"name": "Grace"}' }]);
    const outcome = await extractStructured(ask('k-a'), lines, { schema });
    expect(outcome.data).toEqual({ name: 'Grace' });
    expect(outcome.error).toMatch(/must have required property 'satisfied'/);
    llm.setAnalysisScript('k-a', 'structured', [{ text: 'nope' }, { text: 'still no JSON' }]);
    const unreadable = await extractStructured(ask('k-a'), lines, { schema });
    expect(unreadable).toMatchObject({ data: 'still no JSON', error: 'the answer held no JSON' });
  });

  it('keeps the first answer when asking again fails, and throws when the first request fails', async () => {
    llm.setAnalysisScript('k-a', 'structured', [{ text: '{}' }, { error: { status: 400 } }]);
    const outcome = await extractStructured(ask('k-a'), lines, { schema });
    expect(outcome.data).toEqual({});
    expect(outcome.error).toMatch(/required property 'name'.*asking again failed/);
    llm.setAnalysisScript('k-a', 'structured', [{ error: { status: 500 } }]);
    await expect(extractStructured(ask('k-a'), lines, { schema })).rejects.toBeInstanceOf(ModelFailed);
  });
});
