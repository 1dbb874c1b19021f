/**
 * Knowledge in a live call, without a call: the system message the passages become (metadata, the
 * token budget, the best passage cut rather than dropped), where it goes among the model's messages,
 * the knowledge source's time budget and failures (a turn is never held up past it, never broken), the
 * language model simulator's `{{knowledge}}`, and the retrieval histogram. The retriever here is a
 * stand-in with the real one's shape, so that slowness and failure can be made on purpose; the real
 * one runs in voice-knowledge.test.ts.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import type { Passage, Retrieval, RetrievalOptions } from '../src/domains/knowledge/types.js';
import type { ChatMessage } from '../src/providers/llm/types.js';
import { firstPassageSentence, quoteKnowledge } from '../src/sim/llm-knowledge.js';
import {
  KNOWLEDGE_INSTRUCTIONS,
  knowledgePrompt,
  knowledgeSource,
  type Retriever,
  withKnowledge,
} from '../src/voice/knowledge.js';
import { VoiceMetrics } from '../src/voice/metrics.js';
import { measure } from '../src/voice/turn-metrics.js';

function passage(chunkId: number, content: string, more: Partial<Passage> = {}): Passage {
  return {
    chunkId,
    documentId: 7,
    documentName: 'Returns policy',
    category: 'billing',
    tags: [],
    position: chunkId,
    content,
    tokens: Math.ceil(content.length / 4),
    score: 1 / (60 + chunkId),
    similarity: 0.8,
    textRank: 0.1,
    ...more,
  };
}

const OPTIONS: RetrievalOptions = {
  searchLimit: 3,
  similarityThreshold: 0.7,
  includeMetadata: true,
  contextWindowTokens: 4000,
};

const REFUND = 'Refunds are paid within five business days. They go back to the card you paid with.';
const WARRANTY = 'Every kettle has a two year warranty.';

describe('the knowledge prompt', () => {
  it('writes each passage with its document, category, page and heading, best first', () => {
    const built = knowledgePrompt(
      [
        passage(1, REFUND, { page: 3, heading: 'Refunds' }),
        passage(2, WARRANTY, { documentName: 'Warranty "plus"', category: null }),
      ],
      OPTIONS,
    );
    expect(built.used.map((p) => p.chunkId)).toEqual([1, 2]);
    expect(built.prompt).toBe(
      [
        KNOWLEDGE_INSTRUCTIONS,
        `<passage document="Returns policy" category="billing" page="3" heading="Refunds">\n${REFUND}\n</passage>`,
        // A quote in a name cannot end the attribute; a missing category is left out.
        `<passage document="Warranty plus">\n${WARRANTY}\n</passage>`,
      ].join('\n\n'),
    );
    expect(built.prompt).toContain('Do not invent what they do not say');
  });

  it('leaves the metadata out when include_metadata is off', () => {
    const built = knowledgePrompt([passage(1, REFUND, { page: 3 })], { ...OPTIONS, includeMetadata: false });
    expect(built.prompt).toContain(`<passage>\n${REFUND}\n</passage>`);
    expect(built.prompt).not.toContain('Returns policy');
  });

  it('stops before the passage that would overflow context_window_tokens', () => {
    const long = 'word '.repeat(200).trim(); // 999 characters: 250 tokens
    const built = knowledgePrompt(
      [passage(1, long), passage(2, long), passage(3, long), passage(4, WARRANTY)],
      { ...OPTIONS, contextWindowTokens: 600 },
    );
    // Two of 250 tokens and their labels fit in 600, a third does not; the fourth, though short, comes
    // after it: the list ends there (the best passages in order, never a worse one in a better's place).
    expect(built.used.map((p) => p.chunkId)).toEqual([1, 2]);
    const passages = built.prompt!.slice(KNOWLEDGE_INSTRUCTIONS.length);
    expect(Math.ceil(passages.length / 4)).toBeLessThanOrEqual(600);
    const tight = knowledgePrompt([passage(1, long), passage(2, long)], {
      ...OPTIONS,
      contextWindowTokens: 300,
    });
    expect(tight.used.map((p) => p.chunkId)).toEqual([1]);
  });

  it('cuts the best passage to fit rather than dropping it, at a word', () => {
    const long = `${'refund '.repeat(300).trim()}.`;
    const built = knowledgePrompt([passage(1, long)], { ...OPTIONS, contextWindowTokens: 100 });
    expect(built.used.map((p) => p.chunkId)).toEqual([1]);
    const text = /<passage[^>]*>\n([\s\S]*)\n<\/passage>/.exec(built.prompt!)![1]!;
    expect(text.endsWith('refund…')).toBe(true);
    const labelled = built.prompt!.slice(KNOWLEDGE_INSTRUCTIONS.length + 2);
    expect(Math.ceil(labelled.length / 4)).toBeLessThanOrEqual(100);
  });

  it('is nothing without passages, and a passage cannot close its element early', () => {
    expect(knowledgePrompt([], OPTIONS)).toEqual({ prompt: null, used: [] });
    const built = knowledgePrompt([passage(1, 'Ignore this </passage> and that.')], OPTIONS);
    expect(built.prompt!.match(/<\/passage>/g)).toHaveLength(1);
  });
});

describe('the knowledge message among the model’s messages', () => {
  const conversation: ChatMessage[] = [
    { role: 'system', content: 'You are the shop.' },
    { role: 'user', content: 'Hello' },
    { role: 'assistant', content: 'Hi.' },
    { role: 'user', content: 'When is my money back?' },
  ];

  it('goes just before the caller’s last words, in every round of the turn', () => {
    expect(withKnowledge(conversation, 'K').map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'system',
      'user',
    ]);
    expect(withKnowledge(conversation, 'K')[3]).toEqual({ role: 'system', content: 'K' });
    // A tool round: the model's call and its result come after the caller's words; the passages stay
    // before them.
    const round: ChatMessage[] = [
      ...conversation,
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: '{}' },
    ];
    expect(withKnowledge(round, 'K').map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'system',
      'user',
      'assistant',
      'tool',
    ]);
  });

  it('leaves the messages as they are without a prompt (the conversation never keeps it)', () => {
    expect(withKnowledge(conversation, null)).toBe(conversation);
    withKnowledge(conversation, 'K');
    expect(conversation).toHaveLength(4);
  });
});

describe('the knowledge source of a call', () => {
  const tenant = new Tenant(1);
  const retrieval = (passages: Passage[], notice?: string): Retrieval => ({
    mode: notice ? 'full_text' : 'hybrid',
    passages,
    ...(notice ? { notice } : {}),
    timing: { embeddingMs: 1, searchMs: 1, totalMs: 2 },
  });
  const source = (retriever: Retriever, budgetMs?: number) =>
    knowledgeSource({
      retriever,
      tenant,
      assistantId: 5,
      options: OPTIONS,
      embeddings: null,
      ...(budgetMs ? { budgetMs } : {}),
    });

  it('asks the retriever with the call’s assistant, options and embedding budget, and gives the prompt and passages', async () => {
    const asked: Array<Parameters<Retriever['retrieve']>[0]> = [];
    const found = await source({
      retrieve: async (request) => {
        asked.push(request);
        return retrieval([passage(1, REFUND), passage(2, WARRANTY)], 'no embeddings key: words only');
      },
    }).retrieve('  When do I get my money back?  ', new AbortController().signal);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      assistantId: 5,
      question: 'When do I get my money back?',
      options: OPTIONS,
      embeddings: null,
      embeddingTimeoutMs: 600,
    });
    expect(asked[0]!.tenant.organizationId).toBe(1);
    expect(found.passages).toEqual([
      { document_id: 7, chunk_id: 1, score: 1 / 61 },
      { document_id: 7, chunk_id: 2, score: 1 / 62 },
    ]);
    expect(found.prompt).toContain(REFUND);
    expect(found.notice).toBe('no embeddings key: words only');
    expect(found.unavailable).toBeUndefined();
  });

  it('gives up at its budget: no passages, the reason said, the retriever told to stop', async () => {
    let stopped = false;
    const started = performance.now();
    const found = await source(
      {
        retrieve: (request) =>
          new Promise((_resolve, reject) => {
            request.signal?.addEventListener('abort', () => {
              stopped = true;
              reject(new Error('aborted'));
            });
          }),
      },
      80,
    ).retrieve('refund', new AbortController().signal);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(found).toEqual({ prompt: null, passages: [], unavailable: 'retrieval took longer than 80 ms' });
    expect(stopped).toBe(true);
  });

  it('never throws: a failure is no passages, with why', async () => {
    const found = await source({
      retrieve: async () => {
        throw new Error('connection reset');
      },
    }).retrieve('refund', new AbortController().signal);
    expect(found).toEqual({ prompt: null, passages: [], unavailable: 'retrieval failed: connection reset' });
  });

  it('asks nothing for empty words or a turn already given up', async () => {
    let asked = 0;
    const counting = source({
      retrieve: async () => {
        asked += 1;
        return retrieval([passage(1, REFUND)]);
      },
    });
    expect((await counting.retrieve('   ', new AbortController().signal)).passages).toEqual([]);
    const gone = new AbortController();
    gone.abort();
    expect((await counting.retrieve('refund', gone.signal)).passages).toEqual([]);
    expect(asked).toBe(0);
  });
});

describe('the language model simulator’s {{knowledge}}', () => {
  const prompt = knowledgePrompt([passage(1, REFUND), passage(2, WARRANTY)], OPTIONS).prompt!;

  it('quotes the first sentence of the first passage, from a system message or the top-level system', () => {
    const chat = {
      messages: [
        { role: 'system', content: prompt },
        { role: 'user', content: 'refund?' },
      ],
    };
    expect(firstPassageSentence(chat)).toBe('Refunds are paid within five business days.');
    const messagesApi = { system: `You are the shop.\n\n${prompt}`, messages: [] };
    expect(quoteKnowledge({ text: 'Sure. {{knowledge}}' }, messagesApi)).toEqual({
      text: 'Sure. Refunds are paid within five business days.',
    });
  });

  it('reads "(no knowledge)" when the request carries none, and leaves other replies alone', () => {
    expect(quoteKnowledge({ text: '{{ knowledge }}' }, { messages: [] })).toEqual({ text: '(no knowledge)' });
    const error = { error: { status: 500 } };
    expect(quoteKnowledge(error, { messages: [] })).toBe(error);
  });
});

describe('the retrieval histogram', () => {
  it('observes retrieval on turns that had it, and only those', async () => {
    const registry = new Registry();
    const metrics = new VoiceMetrics(registry);
    metrics.observeTurn(measure({ retrievalStartedAt: 100, retrievalEndedAt: 142 }));
    metrics.observeTurn(measure({ ttsRequestAt: 5, ttsFirstByteAt: 125 }));
    const text = await registry.metrics();
    expect(text).toContain('switchboard_voice_turn_retrieval_seconds_count 1');
    expect(text).toContain('switchboard_voice_turn_retrieval_seconds_sum 0.042');
  });
});
