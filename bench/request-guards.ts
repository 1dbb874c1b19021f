/**
 * What the hardening of the request pipeline costs per request (issue 14): the NUL guard walking a
 * parsed body, beside the `JSON.parse` of the same text that every request already pays; the strict
 * decimal check of path and query integers, beside Ajv's own coercing validator of the same part;
 * and the outbound-target check of a URL with a literal address, beside parsing the URL. Each pair
 * runs alternately in this process; the key figure is the guard's time as a share of its baseline.
 */
import { Ajv } from 'ajv';
import { Type } from 'typebox';
import { boundedSchema } from '../src/http/bounds.js';
import { strictNumberText } from '../src/http/integer-text.js';
import { nulIssues } from '../src/lib/nul.js';
import { OutboundTargets } from '../src/lib/outbound-target.js';
import { median, table } from './support.js';

/** An assistant body as the console sends it: nested settings, lists, a long prompt. */
function assistantBody(promptWords: number): Record<string, unknown> {
  return {
    name: 'Front desk',
    description: 'Answers the phone for the clinic',
    llm_provider: 'llm_a',
    llm_provider_config: { api_key: 'sk-live-0123456789', model: 'gpt-4o-mini', base_url: null },
    llm_settings: {
      temperature: 0.7,
      max_tokens: 512,
      system_prompt: Array.from({ length: promptWords }, (_, i) => `word${i}`).join(' '),
      welcome_message: 'Hello, how can I help?',
      stop_sequences: ['Goodbye', 'Bye now'],
    },
    stt_settings: { model: 'nova-2', language: 'en-US', keywords: ['clinic', 'appointment', 'refill'] },
    tts_settings: { provider: 'tts_a', voice_id: 'rachel', provider_config: { stability: 0.5 } },
    interruption_settings: { interruption_threshold: 3, min_speaking_time: 0.5 },
    tools_settings: {
      end_call: { enabled: true, scenarios: ['caller says goodbye', 'wrong number'] },
      transfer_call: { enabled: true, transfer_numbers: ['+14155550100', '+14155550101'] },
      custom_tools: Array.from({ length: 10 }, (_, i) => ({
        name: `tool_${i}`,
        description: `Looks something up (${i})`,
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
      })),
    },
    metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key_${i}`, `value ${i}`])),
  };
}

/** Nanoseconds per call of `work` (awaited when it answers a promise), over `iterations` calls. */
async function perCall(work: () => unknown, iterations: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const result = work();
    if (result instanceof Promise) await result;
  }
  return Number(process.hrtime.bigint() - started) / iterations;
}

interface Pair {
  name: string;
  baseline: string;
  guard: () => unknown;
  base: () => unknown;
  iterations: number;
}

export async function run(args: string[]): Promise<void> {
  const rounds = Number(args[0] ?? 7);
  const small = JSON.stringify(assistantBody(200));
  const large = JSON.stringify(assistantBody(20_000));
  const smallParsed = JSON.parse(small);
  const largeParsed = JSON.parse(large);

  const querySchema = boundedSchema(
    Type.Object({
      skip: Type.Optional(Type.Integer({ minimum: 0 })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
      assistant_id: Type.Optional(Type.Integer({ minimum: 1 })),
      status: Type.Optional(Type.String()),
    }),
  );
  const ajv = new Ajv({ allErrors: true, coerceTypes: 'array', useDefaults: true, strict: false });
  const bare = ajv.compile(querySchema);
  const strict = strictNumberText(ajv.compile(querySchema), querySchema);
  const query = () => ({ skip: '100', limit: '50', assistant_id: '12345', status: 'completed' });

  const targets = new OutboundTargets({ allowPrivate: false });
  const url = 'https://203.0.113.10/hooks/switchboard';

  const pairs: Pair[] = [
    {
      name: `NUL guard, assistant body (${small.length} B)`,
      baseline: 'JSON.parse of the body',
      guard: () => nulIssues(smallParsed, ['body']),
      base: () => JSON.parse(small),
      iterations: 20_000,
    },
    {
      name: `NUL guard, large body (${large.length} B)`,
      baseline: 'JSON.parse of the body',
      guard: () => nulIssues(largeParsed, ['body']),
      base: () => JSON.parse(large),
      iterations: 2_000,
    },
    {
      name: 'decimal check + Ajv, 3 integers in a query',
      baseline: 'Ajv alone (coercing)',
      guard: () => strict(query()),
      base: () => bare(query()),
      iterations: 200_000,
    },
    {
      name: 'outbound-target check, literal public address',
      baseline: 'new URL() of it',
      guard: () => targets.check(url),
      base: () => new URL(url),
      iterations: 20_000,
    },
  ];

  const samples = new Map<string, { guard: number[]; base: number[] }>();
  for (let round = 0; round <= rounds; round++) {
    for (const pair of pairs) {
      const guard = await perCall(pair.guard, pair.iterations);
      const base = await perCall(pair.base, pair.iterations);
      if (round === 0) continue; // warm-up
      const entry = samples.get(pair.name) ?? { guard: [], base: [] };
      entry.guard.push(guard);
      entry.base.push(base);
      samples.set(pair.name, entry);
    }
  }
  const rows = pairs.map((pair) => {
    const s = samples.get(pair.name)!;
    const ratios = s.guard.map((g, i) => g / s.base[i]!);
    return {
      guard: pair.name,
      'guard µs': (median(s.guard) / 1000).toFixed(2),
      baseline: pair.baseline,
      'baseline µs': (median(s.base) / 1000).toFixed(2),
      'guard / baseline': median(ratios).toFixed(2),
    };
  });
  table(rows);
  console.log(
    `request guards: NUL guard ${rows[0]!['guard / baseline']}× of JSON.parse on an assistant body; decimal check + Ajv ${rows[2]!['guard / baseline']}× of Ajv alone`,
  );
}
