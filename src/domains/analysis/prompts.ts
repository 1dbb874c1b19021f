/**
 * What the after-call analysis asks a language model, word for word: the two tasks (summary with
 * sentiment; structured data), each a system prompt that opens with its task marker, and the
 * transcript as the user message. The markers let the language model simulator (sim/llm-analysis.ts)
 * recognise the requests and answer them from the transcript and the schema they carry, as a model
 * would; to a real model they are a harmless first line.
 */
import type { ChatMessage } from '../../providers/llm/types.js';

export const ANALYSIS_TASKS = {
  summary: '[switchboard call analysis: summary]',
  structured: '[switchboard call analysis: structured data]',
} as const;
export type AnalysisTask = keyof typeof ANALYSIS_TASKS;

/** The transcript in the user message, between these tags, one `Caller:` or `Assistant:` line each. */
export const TRANSCRIPT_TAGS = ['<transcript>', '</transcript>'] as const;
/** The structured data's JSON Schema in the system prompt, between these tags. */
export const SCHEMA_TAGS = ['<json-schema>', '</json-schema>'] as const;
export const SPEAKER_LABELS = { user: 'Caller', assistant: 'Assistant' } as const;

/** Transcripts longer than this keep their start and their end (a model's context is finite). */
const MAX_TRANSCRIPT_CHARS = 40_000;

export interface TranscriptLine {
  speaker: 'user' | 'assistant';
  text: string;
}

/** The transcript as the model reads it. */
export function transcriptText(lines: readonly TranscriptLine[]): string {
  const text = lines.map((line) => `${SPEAKER_LABELS[line.speaker]}: ${line.text.trim()}`).join('\n');
  if (text.length <= MAX_TRANSCRIPT_CHARS) return text;
  const half = Math.floor(MAX_TRANSCRIPT_CHARS / 2);
  const left = text.length - 2 * half;
  return `${text.slice(0, half)}\n[… ${left} characters left out …]\n${text.slice(-half)}`;
}

function transcriptMessage(lines: readonly TranscriptLine[]): ChatMessage {
  return {
    role: 'user',
    content: `${TRANSCRIPT_TAGS[0]}\n${transcriptText(lines)}\n${TRANSCRIPT_TAGS[1]}`,
  };
}

/** The summary and sentiment request: one JSON object back. */
export function summaryMessages(lines: readonly TranscriptLine[]): ChatMessage[] {
  return [
    {
      role: 'system',
      content: [
        ANALYSIS_TASKS.summary,
        'You analyse a finished phone call between a caller and a voice assistant. The transcript is in ' +
          'the user message; "Caller" is the person who called or was called.',
        'Answer with one JSON object and nothing else:',
        '{"summary": string, "sentiment": "positive" | "neutral" | "negative", "sentiment_score": number}',
        '- summary: two or three sentences: what the caller wanted, what was agreed or done, how the call ended.',
        '- sentiment: the caller’s overall mood during the call.',
        '- sentiment_score: from -1 (very negative) through 0 (neutral) to 1 (very positive).',
      ].join('\n'),
    },
    transcriptMessage(lines),
  ];
}

/** The structured data request: the assistant's prompt, its schema, JSON only. */
export function structuredMessages(
  lines: readonly TranscriptLine[],
  prompt: string | undefined,
  schema: object | undefined,
): ChatMessage[] {
  return [
    {
      role: 'system',
      content: [
        ANALYSIS_TASKS.structured,
        'You extract data from a finished phone call between a caller and a voice assistant. The ' +
          'transcript is in the user message; "Caller" is the person who called or was called.',
        `Instructions: ${prompt?.trim() || 'Extract the data the schema below describes.'}`,
        ...(schema
          ? [
              'Answer with JSON only — no prose, no code fence — valid against this JSON Schema. Leave out ' +
                'optional properties the call does not tell; never invent values.',
              SCHEMA_TAGS[0],
              JSON.stringify(schema, null, 2),
              SCHEMA_TAGS[1],
            ]
          : ['Answer with one JSON object and nothing else — no prose, no code fence.']),
      ].join('\n'),
    },
    transcriptMessage(lines),
  ];
}

/** The follow-up after an answer that did not validate: what was wrong, and the same task again. */
export function correctionMessages(
  asked: readonly ChatMessage[],
  answer: string,
  problems: string,
): ChatMessage[] {
  return [
    ...asked,
    { role: 'assistant', content: answer.trim() === '' ? '(no answer)' : answer },
    {
      role: 'user',
      content:
        `That answer is not valid: ${problems}. Answer again with the corrected JSON only, valid ` +
        'against the schema.',
    },
  ];
}
