/**
 * What an assistant knows, as a live call uses it (docs/knowledge.md, "In live calls"): for each caller
 * turn, the passages of the assistant's documents found for the caller's words
 * (domains/knowledge/retrieval.ts), written into one system message the model reads before it
 * answers. The session asks it at the start of every turn, beside the graph's routing (reply.ts).
 *
 * Time: a turn's answer waits for retrieval, so it has a budget of its own — RETRIEVAL_BUDGET_MS for
 * the whole of it, of which the embedding of the caller's words (a request to an outside vendor, the
 * slow and unpredictable part) may take EMBEDDING_BUDGET_MS. Past the embedding's budget the retriever
 * searches by words alone (still useful, and the search itself takes milliseconds); past the whole
 * budget the turn goes on without passages and says why. One second keeps a slow vendor from costing
 * the caller more than a second of silence, while a healthy one (100–300 ms) always fits.
 *
 * Never throws: any failure is "no passages" with the reason, so knowledge can make an answer better
 * but never stop one.
 */
import type { Tenant } from '../db/tenant.js';
import {
  type EmbeddingsChoice,
  estimateTokens,
  type Passage,
  type Retrieval,
  type RetrievalOptions,
} from '../domains/knowledge/types.js';
import type { ChatMessage } from '../providers/llm/types.js';
import type { TurnPassage } from './turn-metrics.js';

/** The whole retrieval of one turn (ms): past it the turn is answered without passages. */
export const RETRIEVAL_BUDGET_MS = 1000;
/** The embedding of the caller's words (ms): past it the search is by words alone. */
export const EMBEDDING_BUDGET_MS = 600;

/** What one turn's retrieval gives the answer. */
export interface TurnKnowledge {
  /** The system message with the passages; null when none were found (or retrieval failed). */
  prompt: string | null;
  /** The passages in the prompt, as the turn records them. */
  passages: TurnPassage[];
  /** Why the search was by words alone (no embeddings key, the vendor failed), when it was. */
  notice?: string;
  /** Why the turn has no passages although it should have (time budget spent, a failure). */
  unavailable?: string;
}

/** The knowledge of the assistant answering (an `AssistantSpec`'s); absent: the assistant has none. */
export interface KnowledgeSource {
  /** The passages for `question`; never rejects. Aborting `signal` gives up at once. */
  retrieve(question: string, signal: AbortSignal): Promise<TurnKnowledge>;
}

/** The retriever as a call uses it (`KnowledgeRetriever` of domains/knowledge/retrieval.ts). */
export interface Retriever {
  retrieve(request: {
    tenant: Tenant;
    assistantId: number;
    question: string;
    options: RetrievalOptions;
    embeddings: EmbeddingsChoice | null;
    signal?: AbortSignal;
    embeddingTimeoutMs?: number;
  }): Promise<Retrieval>;
}

export interface SourceParts {
  retriever: Retriever;
  tenant: Tenant;
  assistantId: number;
  options: RetrievalOptions;
  /** Resolved once when the call starts; null: no key, retrieval by words alone. */
  embeddings: EmbeddingsChoice | null;
  budgetMs?: number;
  embeddingBudgetMs?: number;
}

const NOTHING: TurnKnowledge = { prompt: null, passages: [] };

/** The knowledge source of one assistant in one call. */
export function knowledgeSource(parts: SourceParts): KnowledgeSource {
  const budgetMs = parts.budgetMs ?? RETRIEVAL_BUDGET_MS;
  return {
    async retrieve(question, signal) {
      const words = question.trim();
      if (words === '' || signal.aborted) return NOTHING;
      const abort = new AbortController();
      const stop = () => abort.abort();
      signal.addEventListener('abort', stop, { once: true });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), budgetMs);
      });
      try {
        const found = await Promise.race([
          parts.retriever.retrieve({
            tenant: parts.tenant,
            assistantId: parts.assistantId,
            question: words,
            options: parts.options,
            embeddings: parts.embeddings,
            signal: abort.signal,
            embeddingTimeoutMs: Math.min(parts.embeddingBudgetMs ?? EMBEDDING_BUDGET_MS, budgetMs),
          }),
          late,
        ]);
        if (found === 'late') {
          abort.abort();
          return { ...NOTHING, unavailable: `retrieval took longer than ${budgetMs} ms` };
        }
        const built = knowledgePrompt(found.passages, parts.options);
        return {
          prompt: built.prompt,
          passages: built.used.map(turnPassage),
          ...(found.notice ? { notice: found.notice } : {}),
        };
      } catch (error) {
        if (signal.aborted) return NOTHING;
        return { ...NOTHING, unavailable: `retrieval failed: ${(error as Error).message}` };
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
      }
    },
  };
}

export function turnPassage(passage: Passage): TurnPassage {
  return { document_id: passage.documentId, chunk_id: passage.chunkId, score: passage.score };
}

/** What the model is told about the passages, before them. */
export const KNOWLEDGE_INSTRUCTIONS =
  'Knowledge base: passages from the documents you answer from, found for the caller’s last words. ' +
  'When they are relevant, answer from them. Do not invent what they do not say: if they do not hold ' +
  'the answer, say you do not know rather than guess. Speak the answer naturally; do not read out ' +
  'these labels.';

/**
 * The system message for `passages` (best first): each in a `<passage>` element — with its document's
 * name, category, page and heading as attributes when `includeMetadata` — while the passages and their
 * labels fit `contextWindowTokens`. A passage that would overflow ends the list; the first is cut to
 * fit rather than dropped (as retrieval does). Null when no passage is given.
 */
export function knowledgePrompt(
  passages: Passage[],
  options: Pick<RetrievalOptions, 'includeMetadata' | 'contextWindowTokens'>,
): { prompt: string | null; used: Passage[] } {
  const blocks: string[] = [];
  const used: Passage[] = [];
  let left = options.contextWindowTokens;
  for (const passage of passages) {
    const open = `<passage${options.includeMetadata ? attributes(passage) : ''}>`;
    const frame = `${open}\n\n</passage>`;
    let content = passage.content.trim().replaceAll('</passage>', '</ passage>');
    const cost = estimateTokens(frame) + estimateTokens(content);
    if (cost > left) {
      if (used.length > 0) break;
      // The best passage is cut to what fits, at a word where it can be.
      const room = (left - estimateTokens(frame)) * 4 - 1;
      if (room < 40) break;
      const cut = content.slice(0, room);
      const space = cut.lastIndexOf(' ');
      content = `${space > room / 2 ? cut.slice(0, space) : cut}…`;
    }
    blocks.push(`${open}\n${content}\n</passage>`);
    used.push(passage);
    left -= estimateTokens(frame) + estimateTokens(content);
  }
  if (blocks.length === 0) return { prompt: null, used: [] };
  return { prompt: [KNOWLEDGE_INSTRUCTIONS, ...blocks].join('\n\n'), used };
}

function attributes(passage: Passage): string {
  const pairs: Array<[string, string | number | null | undefined]> = [
    ['document', passage.documentName],
    ['category', passage.category],
    ['page', passage.page],
    ['heading', passage.heading],
  ];
  return pairs
    .filter(([, value]) => value !== null && value !== undefined && value !== '')
    .map(
      ([name, value]) =>
        ` ${name}="${String(value)
          .replace(/["<>\s]+/g, ' ')
          .trim()}"`,
    )
    .join('');
}

/**
 * The messages of one model request with the turn's knowledge: `prompt` as a system message just
 * before the caller's last words (the conversation itself never keeps it, so later turns do not pile
 * up old passages). Unchanged without a prompt.
 */
export function withKnowledge(messages: ChatMessage[], prompt: string | null | undefined): ChatMessage[] {
  if (!prompt) return messages;
  let at = messages.length;
  for (let i = messages.length - 1; i > 0; i--) {
    if (messages[i]!.role === 'user') {
      at = i;
      break;
    }
  }
  return [...messages.slice(0, at), { role: 'system', content: prompt }, ...messages.slice(at)];
}
