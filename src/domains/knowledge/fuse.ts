/**
 * Reciprocal rank fusion, and fitting passages into the prompt's token budget: the pure end of
 * retrieval (retrieval.ts feeds it the two candidate lists).
 *
 * RRF scores a chunk Σ 1 / (k + rank) over the lists it appears in (rank from 1; k = 60, the value of
 * Cormack et al. that most systems keep). It needs no calibration between cosine similarities and
 * ts_rank_cd figures, which live on unrelated scales; a chunk both lists found outranks one only
 * either found, unless that one stood near the top of its list.
 */

import type { TextCandidate } from './text-search.js';
import type { Passage } from './types.js';
import type { VectorCandidate } from './vector-search.js';

export const RRF_K = 60;

/** Both lists fused, best first (ties: the better similarity, then the lower chunk id). */
export function fuse(vector: VectorCandidate[], text: TextCandidate[]): Passage[] {
  const byChunk = new Map<number, Passage>();
  const add = (candidate: VectorCandidate | TextCandidate, rank: number) => {
    const found = byChunk.get(candidate.chunkId);
    const passage: Passage = found ?? {
      ...withoutScores(candidate),
      score: 0,
      similarity: null,
      textRank: null,
    };
    passage.score += 1 / (RRF_K + rank);
    if ('similarity' in candidate) passage.similarity = candidate.similarity;
    if ('textRank' in candidate) passage.textRank = candidate.textRank;
    byChunk.set(candidate.chunkId, passage);
  };
  for (const [i, candidate] of vector.entries()) add(candidate, i + 1);
  for (const [i, candidate] of text.entries()) add(candidate, i + 1);
  return [...byChunk.values()].sort(
    (a, b) => b.score - a.score || (b.similarity ?? -1) - (a.similarity ?? -1) || a.chunkId - b.chunkId,
  );
}

function withoutScores(
  candidate: VectorCandidate | TextCandidate,
): Omit<Passage, 'score' | 'similarity' | 'textRank'> {
  const {
    similarity: _similarity,
    textRank: _textRank,
    ...rest
  } = candidate as VectorCandidate & TextCandidate;
  return rest;
}

/**
 * The passages, in order, that fit `budget` tokens together: stops before the first that would
 * overflow. The first passage alone is cut to the budget rather than dropped, so a tight budget still
 * gives the model the best passage's beginning.
 */
export function fitBudget(passages: Passage[], budget: number): Passage[] {
  const fitted: Passage[] = [];
  let used = 0;
  for (const passage of passages) {
    if (used + passage.tokens <= budget) {
      fitted.push(passage);
      used += passage.tokens;
      continue;
    }
    if (fitted.length === 0 && budget > 0) {
      // estimateTokens counts 4 characters a token: the cut keeps budget × 4 characters.
      fitted.push({ ...passage, content: passage.content.slice(0, budget * 4), tokens: budget });
    }
    break;
  }
  return fitted;
}
