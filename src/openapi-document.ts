/**
 * The OpenAPI document, built from the same route schemas as the server on a throwaway in-memory
 * database. One code path for everything that needs the document without a running server: the
 * `switchboard openapi` command prints it, `scripts/generate-client.ts` types the client from it.
 */
import { pino } from 'pino';
import type { Config } from './config.js';
import { openDatabase } from './db/client.js';
import { createPlatform } from './platform.js';

/** The document as `GET /openapi.json` serves it for `config` (its `servers` entry is `config.publicUrl`). */
export async function buildOpenApiDocument(config: Config) {
  const database = await openDatabase({ kind: 'memory' });
  const platform = await createPlatform({
    config,
    secretKey: 'openapi-generation-only-not-a-real-secret',
    database,
    logger: pino({ level: 'silent' }),
  });
  try {
    await platform.app.ready();
    return platform.app.swagger({ yaml: false });
  } finally {
    await platform.stop();
  }
}
