/**
 * Reading what a language model answered: JSON found tolerantly (a code fence, prose around the
 * object), then the summary answer validated and its score clamped. Models are asked for JSON only,
 * but some wrap it anyway; a reply with no usable JSON is an unreadable answer, not a crash.
 */
import { SENTIMENTS, type Sentiment } from '../../db/schema/index.js';

export type Parsed = { ok: true; value: unknown } | { ok: false; error: string };

/** The longest summary kept, in characters. */
export const MAX_SUMMARY_CHARS = 4000;

/** The JSON value in a model's answer: the whole text, a fenced block, or the outermost object or array. */
export function extractJson(text: string): Parsed {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, error: 'the answer was empty' };
  const candidates = [trimmed];
  const fenced = /```(?:json)?\s*\n?([\s\S]*?)```/i.exec(trimmed)?.[1];
  if (fenced) candidates.push(fenced.trim());
  for (const [open, close] of [
    ['{', '}'],
    ['[', ']'],
  ] as const) {
    const start = trimmed.indexOf(open);
    const end = trimmed.lastIndexOf(close);
    if (start !== -1 && end > start) candidates.push(trimmed.slice(start, end + 1));
  }
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(candidate) as unknown };
    } catch {
      // the next way of reading it
    }
  }
  return { ok: false, error: 'the answer held no JSON' };
}

export interface SummaryAnswer {
  summary: string;
  sentiment: Sentiment;
  sentimentScore: number;
}

/** Where a score falls when the model gave a score but no usable label. */
export function sentimentOfScore(score: number): Sentiment {
  if (score >= 0.25) return 'positive';
  if (score <= -0.25) return 'negative';
  return 'neutral';
}

/** The score a label stands for when the model gave a label but no usable score. */
const LABEL_SCORES: Record<Sentiment, number> = { positive: 0.5, neutral: 0, negative: -0.5 };

function scoreOf(value: unknown): number | undefined {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number)) return undefined;
  // Clamped into -1…1; rounded so a float's noise does not reach the API.
  return Math.round(Math.min(1, Math.max(-1, number)) * 1000) / 1000;
}

function labelOf(value: unknown): Sentiment | undefined {
  const label = typeof value === 'string' ? value.trim().toLowerCase() : '';
  return (SENTIMENTS as readonly string[]).includes(label) ? (label as Sentiment) : undefined;
}

/**
 * The summary answer, or why it is unusable. A label without a score (or a score without a label)
 * is completed from the other; a score outside -1…1 is clamped; the summary is trimmed and capped.
 */
export function readSummaryAnswer(text: string): SummaryAnswer | { error: string } {
  const parsed = extractJson(text);
  if (!parsed.ok) return { error: parsed.error };
  const value = parsed.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { error: 'the answer was not a JSON object' };
  const fields = value as Record<string, unknown>;
  const summary = typeof fields.summary === 'string' ? fields.summary.trim() : '';
  if (summary === '') return { error: 'the answer had no summary' };
  const label = labelOf(fields.sentiment);
  const score = scoreOf(fields.sentiment_score);
  if (label === undefined && score === undefined) return { error: 'the answer had no sentiment' };
  return {
    summary: summary.length > MAX_SUMMARY_CHARS ? `${summary.slice(0, MAX_SUMMARY_CHARS - 1)}…` : summary,
    sentiment: label ?? sentimentOfScore(score as number),
    sentimentScore: score ?? LABEL_SCORES[label as Sentiment],
  };
}
