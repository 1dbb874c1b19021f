/**
 * The conformance suite every embeddings adapter runs against its simulator, over real loopback
 * HTTP: golden answers from the vendor's documentation replayed byte for byte (floats, and base64
 * listed out of index order), the request as the service received it, vectors in the inputs' order
 * whatever order the service lists them in, typed failures (401 permanent without the key in the
 * message, 429 retryable with its retry-after, 5xx retryable, 400 permanent, a time-out, an abort
 * and an address nobody answers retryable) and answers that do not fit the request (permanent).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/lib/net.js';
import type { EmbeddingsAdapter, EmbeddingsRequest } from '../../src/providers/embeddings/types.js';
import { ProviderError } from '../../src/providers/errors.js';
import type { EmbeddingsReply } from '../../src/sim/embeddings.js';

/** What the suite needs of a simulator. */
export interface EmbeddingsConformanceSimulator {
  start(port?: number): Promise<string>;
  stop(): Promise<void>;
  addKey(key: string): void;
  inject(...replies: EmbeddingsReply[]): void;
  reset(): void;
  readonly requests: ReadonlyArray<{ key: string | null; body: Record<string, unknown> | undefined }>;
}

export interface EmbeddingsConformanceTarget {
  name: string;
  adapter: EmbeddingsAdapter;
  simulator: EmbeddingsConformanceSimulator;
  /** A model the simulator serves. */
  model: string;
  fixturesDir: string;
}

const KEY = 'sk-conformance-embeddings-0123456789';

/** The error a promise rejected with, checked to be a ProviderError. */
export async function providerFailure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

export function runEmbeddingsConformance(target: EmbeddingsConformanceTarget): void {
  const { adapter, simulator: sim } = target;
  let baseUrl = '';
  const fixture = (file: string) => readFileSync(path.join(target.fixturesDir, file), 'utf8');

  function request(overrides: Partial<EmbeddingsRequest> = {}): EmbeddingsRequest {
    return { apiKey: KEY, baseUrl, model: target.model, inputs: ['Hello there'], ...overrides };
  }

  describe(`${target.name}: embeddings conformance`, () => {
    beforeAll(async () => {
      baseUrl = await sim.start();
      sim.addKey(KEY);
    });
    afterAll(() => sim.stop());
    beforeEach(() => sim.reset());

    describe('golden answers from the vendor documentation', () => {
      it('float-answer.json: the documented answer, read as floats', async () => {
        sim.inject({ raw: fixture('float-answer.json') });
        const documented = JSON.parse(fixture('request.json')) as { input: string; model: string };
        const result = await adapter.embed(request({ model: documented.model, inputs: [documented.input] }));
        expect(result.vectors).toEqual([Float32Array.from([0.0023064255, -0.009327292, -0.0028842222])]);
        expect(result).toMatchObject({ model: 'text-embedding-ada-002', dimensions: 3, promptTokens: 8 });
      });

      it('base64-out-of-order.json: decoded little-endian, and put in the inputs’ order by index', async () => {
        sim.inject({ raw: fixture('base64-out-of-order.json') });
        const result = await adapter.embed(request({ inputs: ['first', 'second'] }));
        expect(result.vectors).toEqual([
          Float32Array.from([-1, 0.75, 0, 0.0625]),
          Float32Array.from([0.25, -0.5, 0.125, 1]),
        ]);
        expect(result).toMatchObject({ model: 'text-embedding-3-small', dimensions: 4, promptTokens: 11 });
      });
    });

    describe('the request and the answer', () => {
      it('sends the model, the inputs as a list and the key; asks for base64', async () => {
        await adapter.embed(request({ inputs: ['one', 'two words'] }));
        expect(sim.requests).toHaveLength(1);
        expect(sim.requests[0]!.key).toBe(KEY);
        expect(sim.requests[0]!.body).toEqual({
          model: target.model,
          input: ['one', 'two words'],
          encoding_format: 'base64',
        });
      });

      it('gives one vector per input, in order, all of the same dimensions', async () => {
        const inputs = ['refund policy', 'warranty terms', 'opening hours'];
        const result = await adapter.embed(request({ inputs }));
        expect(result.vectors).toHaveLength(3);
        expect(result.dimensions).toBeGreaterThan(0);
        for (const v of result.vectors) expect(v.length).toBe(result.dimensions);
        // Each input alone gives the vector it had in the batch: the order is the inputs'.
        const alone = await adapter.embed(request({ inputs: ['warranty terms'] }));
        expect(result.vectors[1]).toEqual(alone.vectors[0]);
        expect(result.vectors[0]).not.toEqual(alone.vectors[0]);
      });

      it('orders by index when the service lists the vectors in reverse', async () => {
        const inputs = ['alpha', 'beta', 'gamma'];
        const inOrder = await adapter.embed(request({ inputs }));
        sim.inject({ reversed: true });
        const reversed = await adapter.embed(request({ inputs }));
        expect(reversed.vectors).toEqual(inOrder.vectors);
      });

      it('sends no key when there is none (an address that needs none)', async () => {
        await adapter.embed(request({ apiKey: null })).catch(() => undefined);
        expect(sim.requests[0]!.key).toBeNull();
      });
    });

    describe('failures', () => {
      it('401 wrong key: permanent, and the key is not in the message', async () => {
        const wrong = 'sk-wrong-key-abcdef0123456789';
        const error = await providerFailure(adapter.embed(request({ apiKey: wrong })));
        expect(error).toMatchObject({ retryable: false, status: 401 });
        expect(error.message).not.toContain(wrong);
        expect(error.message).not.toContain(wrong.slice(-4));
        expect(error.options.provider).toBe(adapter.provider);
      });

      it('429: retryable, with the retry-after the service asked for', async () => {
        sim.inject({ error: { status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 1.5 } });
        const error = await providerFailure(adapter.embed(request()));
        expect(error).toMatchObject({ retryable: true, status: 429, code: 'rate_limit_exceeded' });
        expect(error.options.retryAfterSeconds).toBe(1.5);
      });

      it('429 insufficient quota: permanent', async () => {
        sim.inject({ error: { status: 429, code: 'insufficient_quota', type: 'insufficient_quota' } });
        expect((await providerFailure(adapter.embed(request()))).retryable).toBe(false);
      });

      it('500, 503 and 408 retryable; 400 and 404 permanent', async () => {
        for (const [status, retryable] of [
          [500, true],
          [503, true],
          [408, true],
          [400, false],
          [404, false],
        ] as const) {
          sim.inject({ error: { status } });
          const error = await providerFailure(adapter.embed(request()));
          expect({ status: error.status, retryable: error.retryable }).toEqual({ status, retryable });
        }
      });

      it('no answer in time: a retryable time-out', async () => {
        sim.inject({ delayMs: 1_000 });
        const started = performance.now();
        const error = await providerFailure(adapter.embed(request({ timeoutMs: 100 })));
        expect(error.retryable).toBe(true);
        expect(performance.now() - started).toBeLessThan(900);
      });

      it('an aborted signal: retryable, and nothing waits for the answer', async () => {
        sim.inject({ delayMs: 1_000 });
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 50);
        const started = performance.now();
        const error = await providerFailure(adapter.embed(request({ signal: controller.signal })));
        expect(error.retryable).toBe(true);
        expect(performance.now() - started).toBeLessThan(900);
      });

      it('an address nobody answers: retryable', async () => {
        const nobody = `http://127.0.0.1:${await freePort()}/v1`;
        expect((await providerFailure(adapter.embed(request({ baseUrl: nobody })))).retryable).toBe(true);
      });
    });

    describe('answers that do not fit the request: permanent', () => {
      const item = (index: unknown, embedding: unknown = [0.1, 0.2]) => ({
        object: 'embedding',
        index,
        embedding,
      });
      const cases: Array<[string, unknown]> = [
        ['not JSON', 'not json at all'],
        ['no data list', { object: 'list', model: 'm' }],
        ['fewer vectors than inputs', { object: 'list', data: [item(0)] }],
        ['an index twice', { object: 'list', data: [item(0), item(0)] }],
        ['an index out of range', { object: 'list', data: [item(0), item(2)] }],
        ['vectors of different dimensions', { object: 'list', data: [item(0), item(1, [0.1, 0.2, 0.3])] }],
        [
          'a vector that is neither numbers nor base64',
          { object: 'list', data: [item(0), item(1, { x: 1 })] },
        ],
      ];
      for (const [what, body] of cases) {
        it(what, async () => {
          sim.inject({ raw: body });
          const error = await providerFailure(adapter.embed(request({ inputs: ['a', 'b'] })));
          expect(error).toMatchObject({ retryable: false, code: 'malformed_answer' });
        });
      }
    });
  });
}
