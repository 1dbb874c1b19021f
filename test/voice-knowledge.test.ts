/**
 * Knowledge in a live call, end to end (issue 20: "hold a simulated call in which the assistant
 * answers from a document"): a document uploaded through the real route and processed by the real
 * job (embeddings from the embeddings simulator), then a call — carrier_a, a simulated phone, stt_a,
 * the language model and tts_a simulators — in which the caller asks in other words than the
 * document's, the model is given the passage and its scripted answer quotes it (`{{knowledge}}`), and
 * the turn records the retrieval time and the passage. Without rag_settings.enabled nothing is
 * searched; with a hanging embeddings service the turn is not held past the budget; after a graph's
 * hand-off the next assistant answers the same turn from its own documents.
 */
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knowledgeChunks } from '../src/db/schema/knowledge.js';
import { EmbeddingsSimulator } from '../src/sim/embeddings.js';
import type { LlmRecordedRequest } from '../src/sim/llm.js';
import { RETRIEVAL_BUDGET_MS } from '../src/voice/knowledge.js';
import { expectStatus } from './support/factories.js';
import { waitFor } from './support/harness.js';
import { askToBook, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import { routeNumberToGraph } from './support/voice-rig-graph.js';
import type { RigOrganization } from './support/voice-rig-vendors.js';

const embeddings = new EmbeddingsSimulator();
let rig: VoiceRig;
/** The embeddings requests made before a call (processing's). */
let embeddingsBefore = 0;

beforeAll(async () => {
  const url = await embeddings.start();
  rig = await startVoiceRig({ env: { EMBEDDINGS_BASE_URL: url } });
}, 60_000);
afterAll(async () => {
  await rig?.close();
  await embeddings.stop();
});

/** A clinic's leaflet: one fact per paragraph, each a passage of its own (chunk_size 100). */
const LEAFLET = [
  'Parking is free behind the building for the first two hours.',
  'The clinic opens at seven thirty in the morning on weekdays.',
  'Bring your insurance card and a photo ID to every visit.',
  'Prescriptions are renewed by phone within two working days.',
].join('\n\n');
const FACT = 'The clinic opens at seven thirty in the morning on weekdays.';
/** What the caller asks: other words, sharing a few stems with the fact (the simulator's vectors are by words). */
const QUESTION = 'How early is the clinic open on a weekday?';

const RAG = { enabled: true, chunk_size: 100, chunk_overlap: 0, similarity_threshold: 0.2 };

/** Uploads the leaflet to an assistant (default the organization's) and waits until it is processed. */
async function uploadLeaflet(org: RigOrganization, assistantId = org.assistantId): Promise<number> {
  const data = new FormData();
  data.append('name', 'Clinic leaflet');
  data.append('category', 'patients');
  data.append('file', new Blob([LEAFLET], { type: 'text/plain' }), 'leaflet.txt');
  const encoded = new Response(data);
  const uploaded = await rig.t.app.inject({
    method: 'POST',
    url: `/api/v1/assistants/${assistantId}/documents/upload`,
    headers: { ...org.admin.headers, 'content-type': encoded.headers.get('content-type')! },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  expectStatus(uploaded, 201);
  const documentId = (uploaded.json() as { id: number }).id;
  await waitFor(async () => {
    const status = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/assistants/${assistantId}/documents/${documentId}/status`,
      headers: org.admin.headers,
    });
    const body = status.json() as { status: string; error?: string | null };
    if (body.status === 'failed') throw new Error(`processing failed: ${body.error}`);
    return body.status === 'completed';
  }, 30_000);
  return documentId;
}

/** The passage of the document holding `text`. */
async function chunkWith(documentId: number, text: string): Promise<number> {
  const rows = await rig.t.database.db
    .select({ id: knowledgeChunks.id, content: knowledgeChunks.content })
    .from(knowledgeChunks)
    .where(and(eq(knowledgeChunks.documentId, documentId)));
  const row = rows.find((each) => each.content.includes(text));
  if (!row) throw new Error(`no passage holds "${text}"`);
  return row.id;
}

/** The system text of a chat completions request (the knowledge message is one of its system messages). */
const systemText = (request: LlmRecordedRequest) =>
  request.messages
    .filter((m) => m.role === 'system')
    .map((m) => String(m.content))
    .join('\n');

describe('a live call with knowledge', () => {
  it('answers the caller’s question from an uploaded document, and records the passage on the turn', async () => {
    let documentId = 0;
    const outcome = await rig.call({
      heard: [QUESTION],
      assistant: { rag_settings: RAG },
      prepare: async (org) => {
        documentId = await uploadLeaflet(org);
      },
      llm: [{ text: 'Let me check. {{knowledge}}' }],
      script: askToBook,
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.user_text).toBe(QUESTION);
    expect(reply?.assistant_text).toBe(`Let me check. ${FACT}`);
    // The turn: how long the search took, and which passages the answer was given (best first).
    expect(reply?.retrieval_ms).toEqual(expect.any(Number));
    expect(reply!.retrieval_ms!).toBeGreaterThanOrEqual(0);
    expect(reply!.retrieval_ms!).toBeLessThan(RETRIEVAL_BUDGET_MS);
    const fact = await chunkWith(documentId, FACT);
    expect(reply?.passages?.[0]).toEqual({
      document_id: documentId,
      chunk_id: fact,
      score: expect.any(Number),
    });
    expect(reply?.marks.retrieval_started_at).toEqual(expect.any(Number));
    expect(reply!.marks.retrieval_ended_at!).toBeLessThanOrEqual(reply!.marks.llm_request_at!);
    // The greeting searched nothing.
    expect(outcome.turns[0]).toMatchObject({ kind: 'greeting', retrieval_ms: null, passages: null });
    // The model was told the passage, with its document's name and category, before the caller's words.
    const request = outcome.llmRequests.find((each) => systemText(each).includes('<passage'))!;
    expect(systemText(request)).toContain('<passage document="Clinic leaflet" category="patients">');
    const roles = request.messages.map((m) => m.role);
    expect(roles.at(-1)).toBe('user');
    expect(roles.at(-2)).toBe('system');
    // The question was embedded with the organization's key and the assistant's model.
    expect(embeddings.requests.at(-1)?.body).toMatchObject({
      model: 'text-embedding-3-small',
      input: [QUESTION],
    });
  }, 90_000);

  it('searches nothing when rag_settings.enabled is off, though documents exist', async () => {
    const outcome = await rig.call({
      heard: [QUESTION],
      assistant: { rag_settings: { ...RAG, enabled: false } },
      prepare: async (org) => {
        await uploadLeaflet(org);
        embeddingsBefore = embeddings.requests.length;
      },
      llm: [{ text: 'Let me check. {{knowledge}}' }],
      script: askToBook,
    });
    expect(embeddings.requests.length).toBe(embeddingsBefore);
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply).toMatchObject({
      assistant_text: 'Let me check. (no knowledge)',
      retrieval_ms: null,
      passages: null,
    });
    expect(reply?.marks.retrieval_started_at).toBeUndefined();
    expect(outcome.llmRequests.some((each) => systemText(each).includes('<passage'))).toBe(false);
  }, 90_000);

  it('is not held up by a hanging embeddings service: the search goes on by words within the budget', async () => {
    const outcome = await rig.call({
      heard: [QUESTION],
      assistant: { rag_settings: RAG },
      prepare: async (org) => {
        await uploadLeaflet(org);
        // The next embeddings request — the caller's question — hangs for 10 s.
        embeddings.inject({ delayMs: 10_000 });
      },
      llm: [{ text: 'Let me check. {{knowledge}}' }],
      script: askToBook,
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toMatch(/^Let me check\. /);
    // Past the embedding's share of the budget, never past the whole.
    expect(reply!.retrieval_ms!).toBeGreaterThanOrEqual(500);
    expect(reply!.retrieval_ms!).toBeLessThanOrEqual(RETRIEVAL_BUDGET_MS + 100);
    // Found by words alone: the question shares "clinic" and "open" with the fact.
    expect(reply?.assistant_text).toBe(`Let me check. ${FACT}`);
  }, 90_000);

  it('answers from the next assistant’s knowledge in the turn a graph hands the call over', async () => {
    let documentId = 0;
    const outcome = await rig.call({
      heard: [QUESTION],
      // The front desk has no knowledge; the clinic desk it hands over to has the leaflet.
      prepare: async (org) => {
        const graph = await routeNumberToGraph(rig.t, org, {
          assistants: { clinic: { rag_settings: RAG } },
          nodes: [
            { assistant: 'entry', node_type: 'entry' },
            { assistant: 'clinic', node_type: 'standard' },
          ],
          edges: [
            {
              from_node_id: 0,
              to_node_id: 1,
              condition_type: 'intent',
              intent_pattern: 'clinic',
              handoff_sentence: 'The clinic desk here.',
            },
          ],
        });
        documentId = await uploadLeaflet(org, graph.assistants.clinic);
      },
      llm: [{ text: 'Let me check. {{knowledge}}' }],
      script: askToBook,
    });
    const reply = outcome.turns.find((turn) => turn.kind === 'reply');
    expect(reply?.assistant_text).toBe(`The clinic desk here. Let me check. ${FACT}`);
    expect(reply?.passages?.[0]).toMatchObject({ document_id: documentId });
    expect(reply?.retrieval_ms).toEqual(expect.any(Number));
  }, 90_000);
});
