/**
 * The kill test of knowledge processing (issue 20): a server process embeds a many-chunk document
 * against a slow embeddings simulator and is killed (kill -9) mid-way; a second process, whose sweep
 * recovers after 2 s (not the job's 15-minute expiry), finishes it: every position stored exactly
 * once, `processed_chunks = total_chunks`, completed by the sweep's job, and no batch stored before
 * the kill embedded again (the inputs embedded add up to at most the chunks plus the one batch in
 * flight when the process died).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingsSimulator } from '../src/sim/embeddings.js';
import { CrashRig } from './support/crash-rig.js';
import { waitFor } from './support/harness.js';
import { paragraphs } from './support/knowledge-docs.js';
import { secret } from './support/secrets.js';
import { freePort, type ServerProcess, serverRequest } from './support/server-process.js';

const sim = new EmbeddingsSimulator();
const rig = new CrashRig('knowledge-durability');
const KEY = secret('durable-embeddings');
/** Chunks of the document (one per paragraph at chunk_size 100) and the processing batch size. */
const CHUNKS = 200;
const BATCH = 32;

beforeAll(async () => {
  await sim.start();
  sim.addKey(KEY);
  await rig.setUp();
});
afterAll(async () => {
  await rig.tearDown();
  await sim.stop();
});

const start = (port: string) =>
  rig.start(port, {
    EMBEDDINGS_BASE_URL: sim.url,
    KNOWLEDGE_SWEEP_INTERVAL_SECONDS: '1',
    KNOWLEDGE_RECOVER_AFTER_SECONDS: '2',
  });

async function upload(server: ServerProcess, token: string, assistantId: number, text: string) {
  const data = new FormData();
  data.append('file', new Blob([text], { type: 'text/plain' }), 'manual.txt');
  const response = await fetch(`${server.baseUrl}/api/v1/assistants/${assistantId}/documents/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: data,
  });
  const body = (await response.json()) as { id: number };
  expect(response.status, JSON.stringify(body)).toBe(201);
  return body.id;
}

const inputsOf = (requests: typeof sim.requests) =>
  requests.flatMap((request) => (request.body?.input as string[] | undefined) ?? []);

describe('a knowledge document across kill -9', () => {
  it('is finished by the next process: each position once, nothing embedded twice but the batch in flight', async () => {
    // Every request answers after 300 ms: a batch stored every ~third of a second, a kill lands mid-way.
    sim.failNext(1000, { delayMs: 300 });
    const port = String(await freePort());
    const first = await start(port);
    const registered = await serverRequest(first, 'POST', '/api/v1/auth/register', {
      body: {
        email: 'knowledge.durability@example.test',
        password: 'crash-and-restart',
        first_name: 'K',
        last_name: 'D',
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const token = registered.body.access_token as string;
    const keyed = await serverRequest(first, 'PUT', '/api/v1/organization', {
      token,
      body: { api_keys: { llm_a: { api_key: KEY } } },
    });
    expect(keyed.status, JSON.stringify(keyed.body)).toBe(200);
    const assistant = await serverRequest(first, 'POST', '/api/v1/assistants', {
      token,
      body: { name: 'Durable knowledge', rag_settings: { chunk_size: 100, chunk_overlap: 0 } },
    });
    expect(assistant.status, JSON.stringify(assistant.body)).toBe(201);
    const assistantId = assistant.body.id as number;
    const id = await upload(first, token, assistantId, paragraphs(CHUNKS).join('\n\n'));
    const statusUrl = `/api/v1/assistants/${assistantId}/documents/${id}/status`;

    await waitFor(async () => {
      const { body } = await serverRequest(first, 'GET', statusUrl, { token });
      const processed = body.processed_chunks as number;
      return body.status === 'processing' && processed > 0 && processed < CHUNKS;
    }, 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const beforeKill = sim.requests.length;
    expect(beforeKill).toBeLessThan(Math.ceil(CHUNKS / BATCH));

    const second = await start(port);
    const done = await waitFor(async () => {
      const { body } = await serverRequest(second, 'GET', statusUrl, { token });
      return body.status === 'completed' ? body : undefined;
    }, 120_000);
    expect(done).toMatchObject({
      processed_chunks: CHUNKS,
      total_chunks: CHUNKS,
      progress: 100,
      retrieval_mode: 'hybrid',
      error: null,
    });
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    // Nothing stored before the kill was embedded again: the batches asked for afterwards share no
    // text with those answered before it (but the last, which may have been in flight); in all, at
    // most one batch more than the chunks.
    const before = new Set(inputsOf(sim.requests.slice(0, beforeKill - 1)));
    const after = inputsOf(sim.requests.slice(beforeKill));
    expect(after.filter((text) => before.has(text))).toEqual([]);
    const total = inputsOf(sim.requests).length;
    expect(total).toBeGreaterThanOrEqual(CHUNKS);
    expect(total).toBeLessThanOrEqual(CHUNKS + BATCH);

    const database = await rig.openDatabase();
    try {
      const { rows: positions } = await database.executeSql(
        `select position, count(*)::int as copies, bool_and(array_length(embedding, 1) = dimensions) as vectors
           from knowledge_chunks where document_id = $1 group by position order by position`,
        [id],
      );
      expect(positions.map((row) => Number(row.position))).toEqual(
        Array.from({ length: CHUNKS }, (_, i) => i),
      );
      expect(positions.filter((row) => Number(row.copies) !== 1 || row.vectors !== true)).toEqual([]);
      const { rows: documents } = await database.executeSql(
        'select status, processed_chunks, total_chunks, generation from knowledge_documents where id = $1',
        [id],
      );
      expect(documents).toEqual([
        { status: 'completed', processed_chunks: CHUNKS, total_chunks: CHUNKS, generation: 1 },
      ]);
      // The killed process's job is still `active` (it expires after 15 minutes); the sweep's job
      // finished the document.
      const { rows: jobs } = await database.executeSql(
        `select state from pgboss.job where name = 'knowledge.process' and (data->>'document_id')::int = $1
          order by created_on`,
        [id],
      );
      expect(jobs.map((row) => row.state)).toEqual(['active', 'completed']);
    } finally {
      await database.close();
    }
  }, 240_000);
});
