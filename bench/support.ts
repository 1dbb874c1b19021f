/** Shared by benchmarks: a platform on a fresh database, and an HTTP load generator in its own process. */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { runMigrations } from '../src/db/migrate.js';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { freePort } from '../src/lib/net.js';
import { createPlatform, type Platform } from '../src/platform.js';
import { adminQuery } from '../test/support/template.js';

const run = promisify(execFile);
const AUTOCANNON = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));
const SECRET = 'benchmark-secret-key-0123456789abcdefghijklmnop';

export interface BenchPlatform {
  platform: Platform;
  baseUrl: string;
  close(): Promise<void>;
}

/**
 * The platform on a fresh in-memory PGlite, or in a database of its own created on the server of
 * BENCH_DATABASE_URL (and dropped at close), listening on a free port that PUBLIC_URL names (so
 * simulators can post webhooks to it). `env` adds settings (simulator base URLs…).
 */
export async function startBenchPlatform(env: Record<string, string> = {}): Promise<BenchPlatform> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-bench-'));
  const adminUrl = process.env.BENCH_DATABASE_URL;
  const databaseName = `switchboard_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  let url: string | undefined;
  if (adminUrl) {
    await adminQuery(adminUrl, `create database "${databaseName}"`);
    const own = new URL(adminUrl);
    own.pathname = `/${databaseName}`;
    url = own.toString();
  }
  const port = await freePort();
  const config = loadConfig({
    DATA_DIR: dataDir,
    SECRET_KEY: SECRET,
    LOG_LEVEL: 'silent',
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    ...(url ? { DATABASE_URL: url } : {}),
    ...env,
  });
  const database = await openDatabase(url ? { kind: 'server', url, poolSize: 10 } : { kind: 'memory' });
  await runMigrations(database);
  const platform = await createPlatform({
    config,
    secretKey: SECRET,
    database,
    logger: pino({ level: 'silent' }),
  });
  const address = await platform.app.listen({ host: '127.0.0.1', port });
  await platform.startWorkers();
  return {
    platform,
    baseUrl: address,
    async close() {
      await platform.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (adminUrl) await adminQuery(adminUrl, `drop database if exists "${databaseName}" with (force)`);
    },
  };
}

export interface LoadResult {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  non2xx: number;
}

/** Drives `url` with autocannon in a separate process, so the server keeps its own core. */
export async function load(
  url: string,
  options: { headers?: Record<string, string>; seconds?: number; connections?: number } = {},
): Promise<LoadResult> {
  const args = [
    AUTOCANNON,
    '--json',
    '-c',
    String(options.connections ?? 10),
    '-d',
    String(options.seconds ?? 5),
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}=${value}`);
  args.push(url);
  const { stdout } = await run(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 });
  const result = JSON.parse(stdout);
  return {
    requestsPerSecond: result.requests.average,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs `op` once to warm up (plans cached, pages in memory), then `times` times in a row: p50/p95 in ms. */
export async function latencies(
  op: () => Promise<unknown>,
  times: number,
): Promise<{ p50: number; p95: number }> {
  await op();
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await op();
    samples.push(performance.now() - started);
  }
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

export function table(rows: Array<Record<string, string | number>>): void {
  console.table(rows);
}

/** Runs `op` `total` times from `concurrency` concurrent loops; answers operations per second. */
export async function timed(
  total: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await op(next++);
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

/** Registers a verified user (and its organization) and signs in: the bearer headers and ids. */
export async function benchUser(
  platform: Platform,
  label: string,
): Promise<{ headers: Record<string, string>; organizationId: number; userId: number }> {
  const email = `${label}@example.test`;
  const password = 'benchmark password';
  const registered = await platform.app.inject({
    method: 'POST',
    url: '/api/v1/auth/register',
    payload: { email, password, first_name: 'Bench', last_name: label },
  });
  if (registered.statusCode !== 201) throw new Error(`register: ${registered.body}`);
  await markEmailVerified(platform.database.db, registered.json().user.id);
  const login = await platform.app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email, password },
  });
  return {
    headers: { authorization: `Bearer ${login.json().access_token}` },
    organizationId: login.json().organization.id,
    userId: registered.json().user.id,
  };
}

/** A response the benchmark needs to have succeeded: returned as it is, or a thrown error naming `what`. */
export function expectOk<R extends { statusCode: number; body: string }>(response: R, what: string): R {
  if (response.statusCode >= 300) throw new Error(`${what}: ${response.statusCode} ${response.body}`);
  return response;
}
