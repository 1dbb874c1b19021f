/**
 * Lints the OpenAPI document with Redocly's `recommended` ruleset (@redocly/openapi-core, pinned as a
 * dev dependency). With no argument it builds the document the way `switchboard openapi` does — the
 * app on a throwaway in-memory database — and with a path it lints that file instead (to compare with
 * an older document). Prints every problem, the counts per rule, and exits 1 on any error.
 *
 *   npm run lint:openapi                  # the document this checkout produces
 *   npm run lint:openapi -- old.json      # a saved document
 */
import { readFileSync } from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { createPlatform } from '../src/platform.js';

/**
 * Rules changed from `recommended`: none. A rule may be switched off here only with the reason
 * written beside it (the document is right and the rule cannot know it).
 */
const RULES: Record<string, 'off' | 'warn' | 'error'> = {};

async function buildDocument(): Promise<string> {
  const database = await openDatabase({ kind: 'memory' });
  const platform = await createPlatform({
    config: loadConfig({ ...process.env, DATA_DIR: process.env.DATA_DIR ?? '/tmp/switchboard-lint-openapi' }),
    secretKey: 'openapi-lint-only-not-a-real-secret',
    database,
    logger: pino({ level: 'silent' }),
  });
  try {
    await platform.app.ready();
    return JSON.stringify(platform.app.swagger(), null, 2);
  } finally {
    await platform.stop();
  }
}

async function main(): Promise<number> {
  const file = process.argv[2];
  const source = file ? readFileSync(file, 'utf8') : await buildDocument();
  const config = await createConfig({ extends: ['recommended'], rules: RULES });
  const problems = await lintFromString({ source, absoluteRef: file ?? 'openapi.json', config });

  const counts = new Map<string, { error: number; warn: number }>();
  for (const problem of problems) {
    const where = problem.location[0]?.pointer ?? '';
    console.log(`${problem.severity.padEnd(5)} ${problem.ruleId}  ${where}\n      ${problem.message}`);
    const count = counts.get(problem.ruleId) ?? { error: 0, warn: 0 };
    if (problem.severity === 'error') count.error += 1;
    else count.warn += 1;
    counts.set(problem.ruleId, count);
  }
  const errors = problems.filter((p) => p.severity === 'error').length;
  const warnings = problems.length - errors;
  console.log('\nrule                                  errors  warnings');
  for (const [rule, count] of [...counts].sort(([a], [b]) => a.localeCompare(b)))
    console.log(`${rule.padEnd(38)}${String(count.error).padStart(6)}${String(count.warn).padStart(10)}`);
  console.log(`\n${file ?? 'the built document'}: ${errors} errors, ${warnings} warnings`);
  return errors > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
