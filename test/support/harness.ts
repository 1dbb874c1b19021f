/**
 * One isolated platform per test file: a private copy of the migrated template database, the real
 * job queue with its workers, the real app (driven with `inject`; listening too when asked), a temporary
 * DATA_DIR for mail files, and the log lines it wrote.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, inject } from 'vitest';
import { type Config, loadConfig } from '../../src/config.js';
import { type Database, openDatabase } from '../../src/db/client.js';
import { loggerOptions } from '../../src/http/logging.js';
import { freePort } from '../../src/lib/net.js';
import type { HostLookup } from '../../src/lib/outbound-target.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import type { CallRuntime } from '../../src/voice/transport.js';
import { adminQuery, databaseUrl, uniqueName } from './template.js';

export const TEST_SECRET_KEY = 'test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz';

export interface TestPlatform {
  platform: Platform;
  app: Platform['app'];
  config: Config;
  database: Database;
  /** Every log line written so far (JSON strings). */
  logs: string[];
  /** The listening address, with `listen: true`. */
  baseUrl: string | undefined;
  /** The server database's address (undefined on the embedded one). */
  databaseUrl: string | undefined;
  mails(): Mail[];
  close(): Promise<void>;
}

export interface Mail {
  file: string;
  to: string;
  subject: string;
  body: string;
}

/** Opens a private database cloned from the migrated template. */
export async function openTestDatabase(): Promise<{
  database: Database;
  url?: string;
  drop(): Promise<void>;
}> {
  const template = inject('template');
  if (template.kind === 'embedded') {
    const database = await openDatabase({
      kind: 'memory',
      loadDataDir: new Blob([readFileSync(template.dumpFile)]),
    });
    return { database, drop: async () => {} };
  }
  const name = uniqueName('sb_test');
  await adminQuery(template.adminUrl, `create database "${name}" template "${template.templateName}"`);
  const database = await openDatabase({
    kind: 'server',
    url: databaseUrl(template.adminUrl, name),
    poolSize: 5,
  });
  return {
    database,
    url: databaseUrl(template.adminUrl, name),
    drop: () => adminQuery(template.adminUrl, `drop database if exists "${name}" with (force)`),
  };
}

export interface TestPlatformOptions {
  /** Start the job-queue workers (default true). */
  workers?: boolean;
  /**
   * Also listen on a loopback port, with PUBLIC_URL pointing at it, so that outside parties (carrier
   * simulators posting webhooks) can reach the platform. `baseUrl` is then set.
   */
  listen?: boolean;
  /** Resolves the hosts of tenants' URLs for the outbound-target policy (default: the system's). */
  hostLookup?: HostLookup;
  /** Where proven media streams go (default: the platform's own). */
  callRuntime?: CallRuntime;
  /**
   * Run on the database of this platform instead of a new one: a second platform instance of one
   * cluster. On a server it has its own connections (a second process would); on the embedded
   * database, which one process owns, it shares the instance. The first platform drops the database.
   */
  shareDatabaseOf?: TestPlatform;
}

/** A database of `other`'s: a new pool on a server, the same instance (left open) when embedded. */
async function sharedDatabase(other: TestPlatform): Promise<Database> {
  if (!other.databaseUrl) return { ...other.database, close: async () => {} };
  return openDatabase({ kind: 'server', url: other.databaseUrl, poolSize: 5 });
}

export async function startTestPlatform(
  env: Record<string, string> = {},
  options: TestPlatformOptions = {},
): Promise<TestPlatform> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-test-'));
  const port = options.listen ? await freePort() : undefined;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    SECRET_KEY: TEST_SECRET_KEY,
    LOG_LEVEL: 'info',
    PUBLIC_URL: port ? `http://127.0.0.1:${port}` : 'http://switchboard.test',
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = pino(loggerOptions(config.logLevel) as object, sink);
  const { database, url, drop } = options.shareDatabaseOf
    ? {
        database: await sharedDatabase(options.shareDatabaseOf),
        url: options.shareDatabaseOf.databaseUrl,
        drop: async () => {},
      }
    : await openTestDatabase();
  const platform = await createPlatform({
    config,
    secretKey: TEST_SECRET_KEY,
    database,
    logger,
    queuePollingIntervalSeconds: 0.5,
    hostLookup: options.hostLookup,
    callRuntime: options.callRuntime,
  });
  const undeclared = watchDeclaredStatuses(platform.app);
  await platform.app.ready();
  if (port) await platform.app.listen({ host: '127.0.0.1', port });
  if (options.workers !== false) await platform.startWorkers();
  return {
    platform,
    app: platform.app,
    baseUrl: port ? `http://127.0.0.1:${port}` : undefined,
    databaseUrl: url,
    config,
    database,
    logs,
    mails: () => readMails(path.join(dataDir, 'mail')),
    async close() {
      await platform.stop();
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
      // Every test file is also a check that no log line held a failed statement's values
      // (database errors are logged as their facts: http/logging.ts).
      const leaked = logs.filter((line) => /Failed query|"params":|"detail":"Key \(/.test(line));
      if (leaked.length > 0) throw new Error(`Log lines hold statement values:\n${leaked.join('\n')}`);
      // And a check that every status the app answered is one its route declares (watchDeclaredStatuses).
      if (undeclared.size > 0) {
        throw new Error(
          `Statuses not declared in the OpenAPI document (add them to the route's schema.response):\n${[...undeclared].join('\n')}`,
        );
      }
    },
  };
}

/**
 * The platform of a test file (or of the describe block it is called in): started before its tests,
 * closed after them once no mail job is left — users made in the tests queue verification mails, and
 * pg-boss completes a job without awaiting it, racing the database close (`mailSettled`). The handle
 * forwards to the started platform, so it is usable in hooks and tests, not at collection time. An
 * `env` known only once earlier hooks ran (a simulator's port) is given as a function; its simulator
 * is then started in a `beforeAll` registered before this call. After-hooks run in reverse order, so
 * hooks registered after this call run before the platform closes.
 */
export function useTestPlatform(
  env: Record<string, string> | (() => Record<string, string>) = {},
  options: TestPlatformOptions = {},
): TestPlatform {
  let started: TestPlatform | undefined;
  beforeAll(async () => {
    started = await startTestPlatform(typeof env === 'function' ? env() : env, options);
  });
  afterAll(async () => {
    // Nothing to close when the start failed: that failure is the one to report.
    if (!started) return;
    // Without workers no mail job ever runs: there is nothing to wait for.
    if (options.workers !== false) await mailSettled(started);
    await started.close();
  });
  return new Proxy({} as TestPlatform, {
    get(_target, key) {
      if (!started)
        throw new Error('useTestPlatform: the platform starts in beforeAll; use it from a hook or a test');
      return Reflect.get(started, key);
    },
  });
}

/**
 * Watches every response `app` sends and collects, as `METHOD /route → status`, each status its route
 * does not declare in `schema.response` (an exact code, or a range such as `2XX`; `default` declares
 * nothing). Must be installed before the app is ready. Exempt, because no operation describes them:
 * answers that no route gave (the not-found handler, URLs the router refuses), and routes hidden from
 * the document — WebSocket upgrades, which @fastify/websocket hides and which refuse with close codes
 * that OpenAPI cannot describe (see campaigns/progress-socket.ts), the docs UI's assets, and
 * /openapi.json itself.
 */
export function watchDeclaredStatuses(app: FastifyInstance): Set<string> {
  const undeclared = new Set<string>();
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions;
    if (request.is404 || !route.url) return;
    const schema = route.schema as { hide?: boolean; response?: Record<string, unknown> } | undefined;
    if (schema?.hide) return;
    const status = String(reply.statusCode);
    const declared = Object.keys(schema?.response ?? {}).some(
      (key) => key === status || key.toUpperCase() === `${status[0]}XX`,
    );
    if (!declared) undeclared.add(`${request.method} ${route.url} → ${status}`);
  });
  return undeclared;
}

/** Reads the `.eml` files the file mailer wrote, decoding quoted-printable bodies. */
function readMails(directory: string): Mail[] {
  let files: string[];
  try {
    files = readdirSync(directory)
      .filter((f) => f.endsWith('.eml'))
      .sort();
  } catch {
    return [];
  }
  return files.map((name) => {
    const file = path.join(directory, name);
    const raw = readFileSync(file, 'utf8');
    const split = raw.indexOf('\n\n');
    const headers = raw.slice(0, split);
    const header = (key: string) => new RegExp(`^${key}: (.*)$`, 'mi').exec(headers)?.[1]?.trim() ?? '';
    let body = raw.slice(split + 2);
    if (/quoted-printable/i.test(header('Content-Transfer-Encoding'))) {
      body = body
        .replace(/=\r?\n/g, '')
        .replace(/=([0-9A-F]{2})/g, (_m, hex) => String.fromCharCode(parseInt(hex, 16)));
    }
    return { file, to: header('To'), subject: header('Subject'), body };
  });
}

export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waitFor: nothing after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits until no mail job is waiting or running: a file's users' verification mails must be done
 * before its database closes (pg-boss completes a job without awaiting it, racing the close).
 */
export async function mailSettled(t: TestPlatform): Promise<void> {
  await waitFor(async () => {
    const counts = await t.platform.queue.counts('mail.send');
    return !counts.created && !counts.retry && !counts.active;
  });
}

/** Waits for the verification mail sent to `email` and returns the token in it. */
export async function verificationToken(t: TestPlatform, email: string): Promise<string> {
  const mail = await waitFor(() => t.mails().find((m) => m.to === email && /Verify/.test(m.subject)));
  const token = /^Verification token: ([A-Za-z0-9_-]+)$/m.exec(mail.body)?.[1];
  if (!token) throw new Error(`No token in mail ${mail.file}`);
  return token;
}
