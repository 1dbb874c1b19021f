/**
 * The structured data an assistant asks for (`custom_settings.structured_data_prompt` and
 * `structured_data_schema`): one request with the prompt and the schema, the answer read as JSON and
 * validated with ajv against the schema; an invalid answer gets one more try that tells the model
 * what was wrong. Still invalid, the answer is kept anyway, with what is wrong beside it.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { extractJson } from './parse.js';
import { correctionMessages, structuredMessages, type TranscriptLine } from './prompts.js';

// As the assistants service checks these schemas when they are saved: addUsedSchema false, so that
// tenants' schemas with the same $id never meet in this shared instance.
const ajv = new Ajv({ strict: false, allErrors: true, addUsedSchema: false });

/** The most of an invalid answer's text, or of the problems with it, that is kept. */
const MAX_KEPT_CHARS = 10_000;
const MAX_ERROR_CHARS = 2000;

export interface StructuredSettings {
  prompt?: string;
  schema?: object;
}

export interface StructuredOutcome {
  /** The answer's JSON (its text, when it was no JSON); valid when `error` is null. */
  data: unknown;
  error: string | null;
  /** The provider that gave the answer kept. */
  provider: string;
}

type Ask = (messages: ReturnType<typeof structuredMessages>) => Promise<{ text: string; provider: string }>;

/** The assistant's structured data settings, when it has any. */
export function structuredSettingsOf(customSettings: unknown): StructuredSettings | undefined {
  if (typeof customSettings !== 'object' || customSettings === null) return undefined;
  const { structured_data_prompt: prompt, structured_data_schema: schema } = customSettings as Record<
    string,
    unknown
  >;
  const settings: StructuredSettings = {
    ...(typeof prompt === 'string' && prompt.trim() !== '' ? { prompt } : {}),
    ...(typeof schema === 'object' && schema !== null && !Array.isArray(schema) ? { schema } : {}),
  };
  return settings.prompt === undefined && settings.schema === undefined ? undefined : settings;
}

function compile(schema: object | undefined): ValidateFunction | string | undefined {
  if (!schema) return undefined;
  try {
    return ajv.compile(schema);
  } catch (error) {
    return `the structured_data_schema does not compile: ${(error as Error).message}`;
  }
}

const capped = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Reads one answer: its value, and what is wrong with it (undefined when valid). */
function check(text: string, validate: ValidateFunction | undefined): { value: unknown; problem?: string } {
  const parsed = extractJson(text);
  if (!parsed.ok) return { value: capped(text.trim(), MAX_KEPT_CHARS), problem: parsed.error };
  if (validate && !validate(parsed.value)) {
    const problem = ajv.errorsText(validate.errors, { dataVar: 'data' });
    return { value: parsed.value, problem: capped(problem, MAX_ERROR_CHARS) };
  }
  if (!validate && (typeof parsed.value !== 'object' || parsed.value === null))
    return { value: parsed.value, problem: 'the answer was no JSON object or array' };
  return { value: parsed.value };
}

/**
 * Asks for the structured data and validates it (one corrective retry). A model failure of the first
 * request is thrown (the job retries); one of the retry keeps the first answer with its error.
 */
export async function extractStructured(
  ask: Ask,
  lines: readonly TranscriptLine[],
  settings: StructuredSettings,
): Promise<StructuredOutcome> {
  const validate = compile(settings.schema);
  if (typeof validate === 'string') return { data: null, error: validate, provider: '' };
  const messages = structuredMessages(lines, settings.prompt, settings.schema);
  const first = await ask(messages);
  const checked = check(first.text, validate);
  if (checked.problem === undefined) return { data: checked.value, error: null, provider: first.provider };
  let second: { text: string; provider: string };
  try {
    second = await ask(correctionMessages(messages, first.text, checked.problem));
  } catch (error) {
    return {
      data: checked.value,
      error: capped(`${checked.problem} (asking again failed: ${(error as Error).message})`, MAX_ERROR_CHARS),
      provider: first.provider,
    };
  }
  const rechecked = check(second.text, validate);
  return {
    data: rechecked.value,
    error: rechecked.problem ?? null,
    provider: second.provider,
  };
}
