/**
 * Embeddings: the OpenAI-compatible adapter against the simulator (the shared conformance suite),
 * then the simulator alone as a client would meet it (keys, limits, `dimensions`, base64), and the
 * simulated vectors themselves (deterministic, unit length, close when texts share words).
 */
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { embedTexts, MAX_EMBEDDING_CHARS } from '../src/domains/knowledge/embedder.js';
import type { EmbeddingsChoice } from '../src/domains/knowledge/types.js';
import { embeddingsAdapter } from '../src/providers/embeddings/index.js';
import { decode, OpenAiEmbeddingsAdapter } from '../src/providers/embeddings/openai-embeddings.js';
import { ProviderError } from '../src/providers/errors.js';
import {
  dimensionsOf,
  SIM_EMBEDDING_DIMENSIONS,
  simulatedEmbedding,
  stem,
} from '../src/sim/embedding-vectors.js';
import { EmbeddingsSimulator, toBase64 } from '../src/sim/embeddings.js';
import { runEmbeddingsConformance } from './support/embeddings-conformance.js';

runEmbeddingsConformance({
  name: 'OpenAI-compatible embeddings',
  adapter: new OpenAiEmbeddingsAdapter('llm_a'),
  simulator: new EmbeddingsSimulator(),
  model: 'text-embedding-3-small',
  fixturesDir: path.join(import.meta.dirname, 'fixtures/vendors/embeddings-openai'),
});

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

/** The simulator's answer as a client reads it (a list of vectors, or an error). */
interface SimAnswer {
  object?: string;
  model?: string;
  data: Array<{ object: string; index: number; embedding: number[] | string }>;
  error?: { message: string; type: string; param: null; code: string | null };
}

/** The i-th vector of an answer, floats or base64 (decoded as the adapter does). */
function vectorOf(answer: SimAnswer, i: number): Float32Array | undefined {
  return decode(answer.data[i]?.embedding);
}

describe('the embeddings simulator', () => {
  const sim = new EmbeddingsSimulator();
  const key = 'sk-sim-key-0123456789';

  async function post(body: unknown, options: { key?: string | null; path?: string } = {}) {
    const auth = options.key === undefined ? key : options.key;
    const response = await fetch(`${sim.url}${options.path ?? '/embeddings'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as SimAnswer };
  }

  beforeAll(async () => {
    await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('answers floats by default, in OpenAI’s shape, with the simulated vectors', async () => {
    const answer = await post({ model: 'text-embedding-3-small', input: ['refund policy', 'warranty'] });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'list',
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) },
    });
    expect(answer.body.data.map((d: { object: string; index: number }) => [d.object, d.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
    ]);
    expect(vectorOf(answer.body, 1)).toEqual(simulatedEmbedding('warranty', 1536));
  });

  it('a single string input is one vector; base64 decodes to the same floats', async () => {
    const floats = await post({ model: 'text-embedding-3-large', input: 'opening hours' });
    const base64 = await post({
      model: 'text-embedding-3-large',
      input: 'opening hours',
      encoding_format: 'base64',
    });
    expect(floats.body.data).toHaveLength(1);
    expect(floats.body.data[0]!.embedding).toHaveLength(3072);
    expect(base64.body.data[0]!.embedding).toBe(toBase64(simulatedEmbedding('opening hours', 3072)));
    expect(vectorOf(base64.body, 0)).toEqual(vectorOf(floats.body, 0));
  });

  it('honours `dimensions` for text-embedding-3-*, refuses it elsewhere like OpenAI', async () => {
    const short = await post({ model: 'text-embedding-3-small', input: ['x'], dimensions: 256 });
    expect(vectorOf(short.body, 0)).toHaveLength(256);
    const ada = await post({ model: 'text-embedding-ada-002', input: ['x'], dimensions: 256 });
    expect(ada.status).toBe(400);
    expect(ada.body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect((await post({ model: 'text-embedding-3-small', input: ['x'], dimensions: 5000 })).status).toBe(
      400,
    );
    expect((await post({ model: 'text-embedding-3-small', input: ['x'], dimensions: 1.5 })).status).toBe(400);
  });

  it('refuses bad bodies with 400: no model, no input, an empty string, too many inputs, a bad format', async () => {
    const bad: unknown[] = [
      'not json',
      { input: ['x'] },
      { model: 'text-embedding-3-small' },
      { model: 'text-embedding-3-small', input: [] },
      { model: 'text-embedding-3-small', input: ['ok', ''] },
      { model: 'text-embedding-3-small', input: '' },
      { model: 'text-embedding-3-small', input: [1, 2] },
      { model: 'text-embedding-3-small', input: Array.from({ length: 2049 }, () => 'x') },
      { model: 'text-embedding-3-small', input: ['x'], encoding_format: 'int8' },
    ];
    for (const body of bad) {
      const answer = await post(body);
      expect([answer.status, answer.body.error?.type]).toEqual([400, 'invalid_request_error']);
    }
    const most = await post({
      model: 'text-embedding-3-small',
      input: Array.from({ length: 2048 }, () => 'x'),
    });
    expect(most.status).toBe(200);
  });

  it('refuses a wrong or missing key with 401 once keys are set, quoting the key masked', async () => {
    expect((await post({ model: 'm', input: ['x'] }, { key: null })).status).toBe(200);
    sim.addKey(key);
    const wrong = await post({ model: 'm', input: ['x'] }, { key: 'sk-not-the-key-abcd' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error?.code).toBe('invalid_api_key');
    expect(wrong.body.error?.message).not.toContain('sk-not-the-key-abcd');
    expect((await post({ model: 'm', input: ['x'] }, { key: null })).status).toBe(401);
    expect((await post({ model: 'm', input: ['x'] })).status).toBe(200);
  });

  it('answers 404 on another path', async () => {
    const answer = await post({ model: 'm', input: ['x'] }, { path: '/chat/completions' });
    expect(answer.status).toBe(404);
  });

  it('fails the next N requests as injected, with retry-after, then answers again; records every request', async () => {
    sim.failNext(2, { error: { status: 429, retryAfterSeconds: 2 } });
    const first = await post({ model: 'm', input: ['x'] });
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('2');
    expect((await post({ model: 'm', input: ['x'] })).status).toBe(429);
    expect((await post({ model: 'm', input: ['x'] })).status).toBe(200);
    expect(sim.requests.map((r) => r.status)).toEqual([429, 429, 200]);
    expect(sim.requests[0]).toMatchObject({
      key,
      path: '/v1/embeddings',
      body: { model: 'm', input: ['x'] },
    });
  });
});

describe('simulated vectors', () => {
  it('are deterministic and of unit length', () => {
    const a = simulatedEmbedding('Our warranty lasts two years', 1536);
    expect(simulatedEmbedding('Our warranty lasts two years', 1536)).toEqual(a);
    expect(cosine(a, a)).toBeCloseTo(1, 5);
    expect(a).toHaveLength(1536);
    expect(simulatedEmbedding('Our warranty lasts two years', 64)).toHaveLength(64);
  });

  it('put a question closer to the passage that shares its words than to an unrelated one', () => {
    const question = simulatedEmbedding('How long is the warranty?', 1536);
    const warranty = cosine(question, simulatedEmbedding('Our warranty lasts two years', 1536));
    const refunds = cosine(question, simulatedEmbedding('Refunds take five business days', 1536));
    expect(warranty).toBeGreaterThan(0.25);
    expect(Math.abs(refunds)).toBeLessThan(0.1);
    expect(warranty).toBeGreaterThan(refunds + 0.2);
  });

  it('stem plurals and -ing/-ed/-ly forms together, and keep near-spellings close', () => {
    expect(stem('refunds')).toBe('refund');
    expect(stem('returned')).toBe(stem('return'));
    expect(stem('returning')).toBe(stem('return'));
    expect(stem('policies')).toBe(stem('policy'));
    expect(stem('boxes')).toBe('box');
    expect(stem('stopped')).toBe('stop');
    expect(stem('quickly')).toBe('quick');
    expect(stem('status')).toBe('status');
    expect(stem('pricing')).toBe(stem('price'));
    const forms = cosine(
      simulatedEmbedding('refunds returned', 256),
      simulatedEmbedding('refund return', 256),
    );
    expect(forms).toBeCloseTo(1, 5);
    const typo = cosine(simulatedEmbedding('warranty', 1536), simulatedEmbedding('warrenty', 1536));
    expect(typo).toBeGreaterThan(0.15);
    expect(typo).toBeLessThan(0.9);
  });

  it('give a text without words a fixed unit vector, and a text of stop words its own', () => {
    const empty = simulatedEmbedding('', 1536);
    expect(simulatedEmbedding(' ?! ', 1536)).toEqual(empty);
    expect(cosine(empty, empty)).toBeCloseTo(1, 5);
    const stopWords = simulatedEmbedding('Who are you?', 1536);
    expect(cosine(stopWords, stopWords)).toBeCloseTo(1, 5);
    expect(cosine(stopWords, empty)).toBeLessThan(0.5);
    expect(cosine(stopWords, simulatedEmbedding('Who were they?', 1536))).toBeLessThan(0.9);
  });

  it('read Unicode letters and digits as words', () => {
    const a = simulatedEmbedding('Garantía de 2 años', 256);
    expect(cosine(a, simulatedEmbedding('garantía', 256))).toBeGreaterThan(0.3);
    expect(cosine(a, simulatedEmbedding('años 2', 256))).toBeGreaterThan(0.3);
  });

  it('are fast: a 1,000-character text in well under 0.1 ms', () => {
    const text = 'Our return policy allows customers to send back unused items within thirty days. '
      .repeat(13)
      .slice(0, 1000);
    for (let i = 0; i < 200; i++) simulatedEmbedding(text, 1536);
    const runs = 2_000;
    const started = performance.now();
    for (let i = 0; i < runs; i++) simulatedEmbedding(text, 1536);
    // Generous for a loaded machine; alone it takes about 30 µs.
    expect((performance.now() - started) / runs).toBeLessThan(0.5);
  });

  it('have the documented dimensions per model', () => {
    expect(SIM_EMBEDDING_DIMENSIONS).toEqual({
      'text-embedding-3-small': 1536,
      'text-embedding-3-large': 3072,
      'text-embedding-ada-002': 1536,
    });
    expect(dimensionsOf('some-other-model')).toBe(1536);
    expect(dimensionsOf('text-embedding-3-large', 512)).toBe(512);
  });

  it('registry: llm_a and custom speak the OpenAI-compatible API, named in their errors', () => {
    expect(embeddingsAdapter().provider).toBe('llm_a');
    expect(embeddingsAdapter('custom').provider).toBe('custom');
    expect(embeddingsAdapter('custom')).toBeInstanceOf(OpenAiEmbeddingsAdapter);
  });
});

describe('embedTexts', () => {
  const sim = new EmbeddingsSimulator();
  const adapter = new OpenAiEmbeddingsAdapter('llm_a');
  let choice: EmbeddingsChoice;

  beforeAll(async () => {
    const baseUrl = await sim.start();
    sim.addKey('sk-embedder-key-0123');
    choice = {
      baseUrl,
      apiKey: 'sk-embedder-key-0123',
      model: 'text-embedding-3-small',
      source: 'organization',
    };
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('sends batches of 96 one after another and gives the vectors in the texts’ order', async () => {
    const texts = Array.from({ length: 200 }, (_, i) => `passage number ${i} about topic ${i % 7}`);
    const result = await embedTexts(adapter, choice, texts);
    expect(sim.requests.map((r) => (r.body!.input as string[]).length)).toEqual([96, 96, 8]);
    expect(result).toMatchObject({ dimensions: 1536, model: 'text-embedding-3-small' });
    expect(result.vectors).toHaveLength(200);
    expect(result.vectors[150]).toEqual(simulatedEmbedding(texts[150]!, 1536));
    // One after another: each request began after the one before was answered.
    const starts = sim.requests.map((r) => r.at);
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
  });

  it('honours a smaller batch size, trims texts and cuts long ones to a safe length', async () => {
    const long = 'word '.repeat(10_000);
    await embedTexts(adapter, choice, ['  padded  ', long, 'three'], { batchSize: 2 });
    const sent = sim.requests.flatMap((r) => r.body!.input as string[]);
    expect(sim.requests).toHaveLength(2);
    expect(sent[0]).toBe('padded');
    expect(sent[1]).toHaveLength(MAX_EMBEDDING_CHARS);
    expect(sent[2]).toBe('three');
  });

  it('refuses an empty (or blank) text before sending anything', async () => {
    await expect(embedTexts(adapter, choice, ['fine', '   '])).rejects.toThrow(/text 1 is empty/);
    expect(sim.requests).toHaveLength(0);
  });

  it('fails as the failing batch failed (a 500 on the second: retryable), with the time limit passed on', async () => {
    sim.inject({ delayMs: 0 }, { error: { status: 500 } });
    const texts = Array.from({ length: 3 }, (_, i) => `text ${i}`);
    const error = await embedTexts(adapter, choice, texts, { batchSize: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(true);
    sim.inject({ delayMs: 1_000 });
    const slow = await embedTexts(adapter, choice, ['x'], { timeoutMs: 50 }).catch((e: unknown) => e);
    expect((slow as ProviderError).retryable).toBe(true);
  });

  it('no texts: no request, no vectors', async () => {
    expect(await embedTexts(adapter, choice, [])).toEqual({
      vectors: [],
      dimensions: 0,
      model: choice.model,
    });
    expect(sim.requests).toHaveLength(0);
  });
});
