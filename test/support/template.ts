/**
 * The migrated database every test file starts from. On embedded PGlite it is a data-directory
 * tarball that each file loads into its own in-memory instance; on a server (TEST_DATABASE_URL) it is
 * a template database that each file copies with CREATE DATABASE … TEMPLATE.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type TemplateInfo =
  | { kind: 'embedded'; dumpFile: string }
  | { kind: 'server'; adminUrl: string; templateName: string };

export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}
