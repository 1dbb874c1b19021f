/**
 * The words half of retrieval, and what both halves share: which chunks an assistant may be answered
 * from, and the columns a candidate carries.
 *
 * Full text: the question's words as English lexemes (stemmed; stop words dropped by the
 * configuration), matched against the chunks' generated `search_vector` (GIN index). A spoken question
 * has words a passage lacks ("so how long is it good for"), so requiring all of them (AND) finds
 * nothing; but any of them (OR) matches a large share of a big knowledge base, and ranking every match
 * is what made this half slow (545 ms p50 at 100,000 chunks). So the search climbs down a ladder of
 * *coordination levels*: first the passages holding all n of the question's words, then those
 * holding n − 1 of them, … down to any one — each level one GIN query (`(a & b) | (a & c) | …`),
 * stopping as soon as the levels so far hold the k candidates asked for. Passages holding more of the
 * words come first; within a level they are ranked by `ts_rank_cd` (cover density: where the words
 * stand close together) against all the question's words.
 *
 * The ladder is built from the question's *rare* words (lexeme-frequency.ts: PostgreSQL's own counts):
 * the rarest first, leaving out words found in more than `COMMON_SHARE` of all passages — unless
 * that would leave fewer than two. A rare word tells more about a passage than a common one (the
 * reason BM25 weighs words by their inverse document frequency), and it is cheap: a level's GIN query
 * reads every posting list of its words, and an "at least 3 of 7" over words each in a tenth of the
 * table read ~40,000 entries for one level (20–38 ms at 100,000 chunks; a question's p95 was 64 ms,
 * 7 ms with common words left out). The common words still rank passages within a level, and when
 * the rare words' levels find fewer than k passages, one last level takes those holding any of them. A level is ranked over at most
 * `LEVEL_ROWS` of its passages (in the table's order): ranking reads each passage's words from the
 * table, ~0.1 ms a passage on a cold cache, so an unbounded last level was what cost the time; the
 * passages the last level contributes are the tail of the list, which reciprocal-rank fusion weighs
 * least. The query is built
 * from the lexemes PostgreSQL itself derives from runs of letters and digits, quoted, so nothing a
 * caller says can be tsquery syntax.
 *
 * Visible chunks: the tenant's, of the assistant, of the document's current generation, of a document
 * `completed` — or `processing`, so a document being processed (for the first time, or again after a
 * settings change, which deleted its old chunks) answers from the passages stored so far rather than
 * from none. `pending` documents have no chunks of their generation; `failed` ones are left out, as
 * their passages may be a partial or wrong reading of the file.
 */
import { eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { knowledgeChunks, knowledgeDocuments } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { type LexemeFrequency, lexemeFrequencies } from './lexeme-frequency.js';
import type { Passage } from './types.js';
import { rowsOf } from './vector-index.js';

/** A chunk as a candidate of either list, with what a passage shows (a passage before it is scored). */
export type CandidateRow = Omit<Passage, 'score' | 'similarity' | 'textRank'>;

export interface TextCandidate extends CandidateRow {
  textRank: number;
}

/** Words of a question the search reads: a long question's words beyond these add cost, not recall. */
const MAX_QUERY_WORDS = 64;
/**
 * Lexemes the ladder combines: level m is an OR of C(n, m) ANDs, so n is kept small (C(7, 3) = 35);
 * the question's first words, in the order said.
 */
const MAX_LADDER_LEXEMES = 7;
/** Passages of one level ranked at most (see the header). */
const LEVEL_ROWS = 100;
/** A word in more than this share of all passages is common: left out of the ladder (see the header). */
const COMMON_SHARE = 0.02;
/** The ladder keeps at least this many words, rarest first, however common. */
const MIN_LADDER_LEXEMES = 2;

/** The documents whose chunks (of the document's current generation) retrieval may answer from. */
function visibleDocument(tenant: Tenant): SQL {
  return sql`${tenant.owns(knowledgeDocuments)}
    and ${inArray(knowledgeDocuments.status, ['processing', 'completed'])}`;
}

/** The chunks retrieval may answer from (statements join knowledge_documents on the chunk's document). */
export function visibleChunk(tenant: Tenant, assistantId: number): SQL {
  return sql`${tenant.where(knowledgeChunks, eq(knowledgeChunks.assistantId, assistantId))}
    and ${visibleDocument(tenant)}
    and ${knowledgeDocuments.generation} = ${knowledgeChunks.generation}`;
}

export const candidateColumns = sql`${knowledgeChunks.id} as "chunkId",
  ${knowledgeChunks.documentId} as "documentId", ${knowledgeDocuments.name} as "documentName",
  ${knowledgeDocuments.category} as "category", array_to_json(${knowledgeDocuments.tags}) as "tags",
  ${knowledgeChunks.position} as "position", ${knowledgeChunks.content} as "content",
  ${knowledgeChunks.tokens} as "tokens", ${knowledgeChunks.location} as "location"`;

export function readCandidate(row: Record<string, unknown>): CandidateRow {
  const location = (typeof row.location === 'string' ? JSON.parse(row.location) : row.location) as {
    page?: number;
    heading?: string;
  } | null;
  const tags = typeof row.tags === 'string' ? JSON.parse(row.tags) : row.tags;
  return {
    chunkId: Number(row.chunkId),
    documentId: Number(row.documentId),
    documentName: String(row.documentName),
    category: (row.category as string | null) ?? null,
    tags: (tags as string[] | null) ?? [],
    position: Number(row.position),
    content: String(row.content),
    tokens: Number(row.tokens),
    ...(location?.page !== undefined ? { page: location.page } : {}),
    ...(location?.heading !== undefined ? { heading: location.heading } : {}),
  };
}

/** The question's words as plain text for `to_tsvector` (runs of letters and digits), or null. */
function questionWords(question: string): string | null {
  const words = [...new Set(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])].slice(0, MAX_QUERY_WORDS);
  return words.length > 0 ? words.join(' ') : null;
}

/** The question's distinct lexemes, in the order first said, by PostgreSQL's English configuration. */
async function questionLexemes(db: Executor, words: string): Promise<string[]> {
  const result = await db.execute(sql`
    select lexeme from unnest(to_tsvector('english', ${words})) as t(lexeme, positions, weights)
    order by positions[1]`);
  return rowsOf(result).map((row) => String(row.lexeme));
}

/**
 * The lexemes the ladder climbs on, rarest first (ties in the order said), and the common ones it
 * leaves for its last level.
 */
export function ladderOf(
  lexemes: string[],
  frequency: LexemeFrequency,
): { rare: string[]; common: string[] } {
  const byRarity = lexemes
    .map((lexeme, said) => ({ lexeme, said, share: frequency(lexeme) }))
    .sort((a, b) => a.share - b.share || a.said - b.said);
  const rare: string[] = [];
  const common: string[] = [];
  for (const [rank, word] of byRarity.entries()) {
    const kept = rank < MIN_LADDER_LEXEMES || word.share <= COMMON_SHARE;
    if (kept && rare.length < MAX_LADDER_LEXEMES) rare.push(word.lexeme);
    else if (!kept) common.push(word.lexeme);
  }
  return { rare, common };
}

/** A lexeme as a tsquery operand: quoted, so it is a word whatever its letters. */
const operand = (lexeme: string) => `'${lexeme.replaceAll("'", "''")}'`;

/** The tsquery text matching passages that hold at least `m` of the lexemes: an OR of ANDs. */
export function atLeastQuery(lexemes: string[], m: number): string {
  const groups: string[] = [];
  const pick = (from: number, chosen: string[]) => {
    if (chosen.length === m) {
      groups.push(chosen.length === 1 ? (chosen[0] as string) : `(${chosen.join(' & ')})`);
      return;
    }
    for (let i = from; i <= lexemes.length - (m - chosen.length); i++)
      pick(i + 1, [...chosen, operand(lexemes[i] as string)]);
  };
  pick(0, []);
  return groups.join(' | ');
}

/** A visible document: its id and generation, and the fields a passage shows, as `readCandidate` reads them. */
type VisibleDocument = Record<string, unknown> & { id: number; generation: number };

/** The assistant's visible documents (a handful of rows). */
async function visibleDocuments(
  db: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<VisibleDocument[]> {
  const result = await db.execute(sql`
    select id, generation, name as "documentName", category, array_to_json(tags) as "tags"
    from knowledge_documents
    where ${visibleDocument(tenant)} and ${knowledgeDocuments.assistantId} = ${assistantId}`);
  return rowsOf(result).map((row) => ({ ...row, id: Number(row.id), generation: Number(row.generation) }));
}

/**
 * The `k` chunks whose words best match the question, best first (see the header for the order).
 *
 * The visible documents are read first and the level queries name them — `(document_id,
 * generation) in (values …)` — rather than joining knowledge_documents: with the join, a planner
 * without statistics (PGlite never runs autovacuum's ANALYZE) chose a nested loop that repeated the
 * words-index scan once per document (95 ms instead of 5 at 100,000 chunks).
 */
export async function textSearch(
  db: Executor,
  tenant: Tenant,
  assistantId: number,
  question: string,
  k: number,
): Promise<TextCandidate[]> {
  const words = questionWords(question);
  if (!words) return [];
  const [lexemes, documents, frequency] = await Promise.all([
    questionLexemes(db, words),
    visibleDocuments(db, tenant, assistantId),
    lexemeFrequencies(db),
  ]);
  if (lexemes.length === 0 || documents.length === 0) return [];
  const byId = new Map(documents.map((document) => [document.id, document]));
  const visible = sql.join(
    documents.map((document) => sql`(${document.id}::int, ${document.generation}::int)`),
    sql`, `,
  );
  const { rare, common } = ladderOf(lexemes, frequency);
  const levels = rare.map((_, i) => atLeastQuery(rare, rare.length - i));
  if (common.length > 0) levels.push(atLeastQuery(common, 1));
  const rankQuery = lexemes.map(operand).join(' | ');
  const found: TextCandidate[] = [];
  for (const level of levels) {
    if (found.length >= k) break;
    const taken = `{${found.map((candidate) => candidate.chunkId).join(',')}}`;
    const result = await db.execute(sql`
      select * from (
        select ${knowledgeChunks.id} as "chunkId", ${knowledgeChunks.documentId} as "documentId",
          ${knowledgeChunks.position} as "position", ${knowledgeChunks.content} as "content",
          ${knowledgeChunks.tokens} as "tokens", ${knowledgeChunks.location} as "location",
          ts_rank_cd(${knowledgeChunks.searchVector}, to_tsquery('simple', ${rankQuery}))::float8 as "textRank"
        from knowledge_chunks
        where ${tenant.where(knowledgeChunks, eq(knowledgeChunks.assistantId, assistantId))}
          and (${knowledgeChunks.documentId}, ${knowledgeChunks.generation}) in (values ${visible})
          and ${knowledgeChunks.searchVector} @@ to_tsquery('simple', ${level})
          and not (${knowledgeChunks.id} = any(${taken}::bigint[]))
        limit ${LEVEL_ROWS}
      ) as level
      order by "textRank" desc, "chunkId"
      limit ${k - found.length}`);
    for (const row of rowsOf(result)) {
      const document = byId.get(Number(row.documentId)) as VisibleDocument;
      found.push({
        ...readCandidate({ ...row, ...document }),
        textRank: Number(row.textRank),
      });
    }
  }
  return found;
}
