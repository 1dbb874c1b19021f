/**
 * How common each word is among all stored passages, for the words half of retrieval to climb its
 * ladder on the rare words of a question (text-search.ts).
 *
 * The figures are PostgreSQL's own: when it analyses `knowledge_chunks` (maintainChunkIndexes does
 * as the table grows; autovacuum too on a server) it keeps, for the `search_vector` column, the most
 * common lexemes and the share of rows holding each (`pg_stats.most_common_elems` and
 * `most_common_elem_freqs`, about a thousand of them). A lexeme not in that list is rarer than all
 * of them. Nothing is stored or counted by us, and the figures cost one catalogue read a minute.
 *
 * They are the whole table's, every tenant's passages together — which is what matters for cost: the
 * words index is one table-wide index, and a lexeme's posting list is as long as the table-wide count.
 * As a measure of how telling a word is they stand in for each assistant's own (a word common in
 * one manual and rare elsewhere counts as rare); nothing of them is ever shown to anyone.
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { rowsOf } from './vector-index.js';

/** The share of passages holding a lexeme (0 when PostgreSQL counts it among the rare ones). */
export type LexemeFrequency = (lexeme: string) => number;

/** How long figures read are used before they are read again. */
const REFRESH_MS = 60_000;

const cached = new WeakMap<object, { at: number; frequency: Promise<LexemeFrequency> }>();

/** The current figures for this database (every lexeme 0 before the table was ever analysed). */
export function lexemeFrequencies(db: Executor): Promise<LexemeFrequency> {
  const known = cached.get(db);
  if (known && Date.now() - known.at < REFRESH_MS) return known.frequency;
  const frequency = read(db).catch(() => () => 0);
  cached.set(db, { at: Date.now(), frequency });
  return frequency;
}

/** The table was just analysed: the next search reads the new figures. */
export function forgetLexemeFrequencies(db: Executor): void {
  cached.delete(db);
}

async function read(db: Executor): Promise<LexemeFrequency> {
  // most_common_elems is anyarray: through text to text[] (the lexemes are text).
  const result = await db.execute(sql`
    select most_common_elems::text::text[] as "lexemes", most_common_elem_freqs as "shares"
    from pg_stats
    where schemaname = current_schema() and tablename = 'knowledge_chunks' and attname = 'search_vector'`);
  const row = rowsOf(result)[0] as { lexemes: string[] | null; shares: number[] | null } | undefined;
  const shares = new Map<string, number>();
  for (const [i, lexeme] of (row?.lexemes ?? []).entries()) shares.set(lexeme, Number(row?.shares?.[i] ?? 0));
  return (lexeme) => shares.get(lexeme) ?? 0;
}
