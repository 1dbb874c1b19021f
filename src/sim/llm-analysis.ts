/**
 * How the language model simulator (llm.ts) answers the platform's after-call analysis, in either
 * dialect: it recognises the requests by the task marker that opens their system prompt
 * (domains/analysis/prompts.ts) and answers deterministically from what they carry, as a model would:
 * - summary: `{summary, sentiment, sentiment_score}`, the summary built from the caller's own words,
 *   the sentiment counted from two short word lists over them;
 * - structured data: a value generated from the JSON Schema in the prompt — its types, enums,
 *   `const`s, required properties, bounds and formats — with values taken from the transcript where a
 *   property's name matches words the caller said ("my account number is 4 4 7 1" fills
 *   `account_number` with 4471; "my name is Ada" fills `name` with "Ada"), so tests get schema-valid
 *   results without scripting them. Optional properties the caller never spoke of are left out.
 */
import {
  ANALYSIS_TASKS,
  type AnalysisTask,
  SCHEMA_TAGS,
  SPEAKER_LABELS,
  TRANSCRIPT_TAGS,
} from '../domains/analysis/prompts.js';
import { contentText } from './llm-messages.js';

export interface AnalysisRequest {
  task: AnalysisTask;
  /** What the caller said, one entry per transcript line. */
  callerLines: string[];
  /** The structured data's schema, when the request carries one. */
  schema?: Record<string, unknown>;
  /** The request follows an answer that did not validate (it tells the model what was wrong). */
  correction: boolean;
}

type Json = Record<string, unknown>;

/** The analysis task of a request, and what it carries; undefined for any other request. */
export function analysisRequestOf(
  body: Json | undefined,
  messages: ReadonlyArray<Json>,
): AnalysisRequest | undefined {
  const system = [
    contentText(body?.system),
    ...messages
      .filter((m) => m.role === 'system' || m.role === 'developer')
      .map((m) => contentText(m.content)),
  ].join('\n');
  const task = (Object.keys(ANALYSIS_TASKS) as AnalysisTask[]).find((name) =>
    system.trimStart().startsWith(ANALYSIS_TASKS[name]),
  );
  if (!task) return undefined;
  const texts = messages.filter((m) => m.role === 'user').map((m) => contentText(m.content));
  const transcript = between(texts.find((text) => text.includes(TRANSCRIPT_TAGS[0])) ?? '', TRANSCRIPT_TAGS);
  const label = `${SPEAKER_LABELS.user}:`;
  const callerLines = (transcript ?? '')
    .split('\n')
    .filter((line) => line.startsWith(label))
    .map((line) => line.slice(label.length).trim());
  let schema: Json | undefined;
  const schemaText = between(system, SCHEMA_TAGS);
  if (schemaText) {
    try {
      schema = JSON.parse(schemaText) as Json;
    } catch {
      schema = undefined;
    }
  }
  return {
    task,
    callerLines,
    ...(schema ? { schema } : {}),
    correction: messages.some((m) => m.role === 'assistant'),
  };
}

function between(text: string, [open, close]: readonly [string, string]): string | undefined {
  const start = text.indexOf(open);
  const end = text.indexOf(close, start + open.length);
  return start === -1 || end === -1 ? undefined : text.slice(start + open.length, end).trim();
}

/** The answer's JSON text. */
export function analysisAnswer(request: AnalysisRequest): string {
  if (request.task === 'summary') return JSON.stringify(summaryOf(request.callerLines));
  return JSON.stringify(generate(request.schema ?? { type: 'object' }, [], request.callerLines) ?? {});
}

const POSITIVE = new Set(
  'thanks thank great good perfect wonderful excellent happy love appreciate awesome glad nice helpful pleased fantastic'.split(
    ' ',
  ),
);
const NEGATIVE = new Set(
  'angry bad terrible awful complaint refund problem upset frustrated hate wrong broken damaged unhappy disappointed worst annoyed useless'.split(
    ' ',
  ),
);

const wordsOf = (text: string) => text.toLowerCase().match(/[a-z0-9']+/g) ?? [];

export function summaryOf(callerLines: readonly string[]): {
  summary: string;
  sentiment: 'positive' | 'neutral' | 'negative';
  sentiment_score: number;
} {
  const words = callerLines.flatMap(wordsOf);
  const positive = words.filter((word) => POSITIVE.has(word)).length;
  const negative = words.filter((word) => NEGATIVE.has(word)).length;
  const score = Math.round(((positive - negative) / Math.max(1, positive + negative)) * 100) / 100;
  const said = callerLines.join(' ').split(/\s+/).filter(Boolean);
  const quote = said.slice(0, 30).join(' ') + (said.length > 30 ? ' …' : '');
  return {
    summary: said.length > 0 ? `The caller said: "${quote}".` : 'The caller said nothing.',
    sentiment: score >= 0.25 ? 'positive' : score <= -0.25 ? 'negative' : 'neutral',
    sentiment_score: score,
  };
}

/** Words that stand between a name and its value ("my name *is* Ada", "number *is*: 12"). */
const FILLER = new Set('is was are my the a an of for to be it its as at on'.split(' '));

const STOPS = new Set(['and', 'but', 'so']);

/** The words of a property name: `accountNumber`, `account_number`, `account-number` → account, number. */
function nameWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 1);
}

/**
 * What the caller said right after the property's name: the words after its last name word in the
 * first caller line naming it, filler skipped. Undefined when no line names it.
 */
function spokenValue(path: readonly string[], callerLines: readonly string[]): string | undefined {
  const name = path.at(-1);
  if (!name) return undefined;
  const wanted = nameWords(name);
  if (wanted.length === 0) return undefined;
  for (const line of callerLines) {
    const tokens = line.split(/\s+/).filter(Boolean);
    const plain = tokens.map((token) => token.toLowerCase().replace(/[^a-z0-9]/g, ''));
    const at = plain.findLastIndex((word) => wanted.some((w) => word === w || word === `${w}s`));
    if (at === -1) continue;
    let next = at + 1;
    while (next < plain.length && FILLER.has(plain[next] as string)) next += 1;
    // The value runs to the end of its clause: a comma or full stop, or "and", "but", "so".
    const value: string[] = [];
    for (const token of tokens.slice(next)) {
      if (value.length > 0 && STOPS.has(token.toLowerCase())) break;
      value.push(token.replace(/[.,!?;:]+$/, ''));
      if (/[.,!?;:]$/.test(token)) break;
    }
    return value.length > 0 ? value.join(' ') : line;
  }
  return undefined;
}

function firstType(schema: Json): string | undefined {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return (type.find((t) => t !== 'null') ?? type[0]) as string | undefined;
  if (schema.properties) return 'object';
  if (schema.items) return 'array';
  return undefined;
}

const FORMATS: Record<string, string> = {
  date: '2025-01-15',
  'date-time': '2025-01-15T10:00:00Z',
  time: '10:00:00Z',
  email: 'caller@example.com',
  uri: 'https://example.com/',
  uuid: '00000000-0000-4000-8000-000000000000',
};

/**
 * A value valid against `schema` (the subset of JSON Schema extraction schemas use), drawn from the
 * caller's words where the property's name is spoken. Undefined: an optional value nobody spoke of.
 */
export function generate(
  schema: unknown,
  path: readonly string[],
  callerLines: readonly string[],
  required = true,
): unknown {
  if (typeof schema !== 'object' || schema === null) return required ? null : undefined;
  const s = schema as Json;
  const spoken = spokenValue(path, callerLines);
  if (!required && spoken === undefined) return undefined;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) {
    // The value said after the property's name, else one said anywhere, else the first.
    const saidIn = (text: string) => (value: unknown) =>
      typeof value === 'string' && text.toLowerCase().includes(value.toLowerCase());
    return s.enum.find(saidIn(spoken ?? '')) ?? s.enum.find(saidIn(callerLines.join(' '))) ?? s.enum[0];
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[key]) && (s[key] as unknown[]).length > 0)
      return generate((s[key] as unknown[])[0], path, callerLines);
  }
  if (Array.isArray(s.allOf)) return generate(Object.assign({}, ...(s.allOf as Json[])), path, callerLines);
  switch (firstType(s)) {
    case 'object': {
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const needed = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const out: Json = {};
      for (const [name, property] of Object.entries(properties)) {
        const value = generate(property, [...path, name], callerLines, needed.has(name));
        if (value !== undefined) out[name] = value;
      }
      return out;
    }
    case 'array': {
      const count = Math.max(Number(s.minItems ?? 0), spoken === undefined ? 0 : 1);
      return Array.from({ length: count }, () => generate(s.items ?? {}, path, callerLines));
    }
    case 'integer':
    case 'number':
      return numberOf(s, spoken, firstType(s) === 'integer');
    case 'boolean':
      return spoken !== undefined && !/^(no|not|never)\b/i.test(spoken);
    case 'null':
      return null;
    case 'string':
      return stringOf(s, spoken ?? callerLines[0] ?? '');
    default:
      return spoken ?? null;
  }
}

function numberOf(schema: Json, spoken: string | undefined, integer: boolean): number {
  // Digits said one by one ("4 4 7 1") make one number, as a caller reads an account number out.
  const digits = spoken
    ?.match(/\d[\d\s.,]*/)?.[0]
    .replace(/[\s,]/g, '')
    .replace(/\.$/, '');
  let value = digits ? Number(digits) : Number(schema.minimum ?? schema.exclusiveMinimum ?? 0);
  if (!Number.isFinite(value)) value = 0;
  if (typeof schema.minimum === 'number') value = Math.max(value, schema.minimum);
  if (typeof schema.maximum === 'number') value = Math.min(value, schema.maximum);
  if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum)
    value = schema.exclusiveMinimum + 1;
  if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum)
    value = schema.exclusiveMaximum - 1;
  return integer ? Math.round(value) : value;
}

function stringOf(schema: Json, text: string): string {
  const format = typeof schema.format === 'string' ? FORMATS[schema.format] : undefined;
  let value = format ?? text;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : undefined;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  if (max !== undefined) value = value.slice(0, max);
  if (value.length < min) value = value.padEnd(min, '.');
  return value;
}
