/**
 * What the kill -9 tests share: a data directory (the embedded pass) or a database of their own made
 * from the template (the server pass), the real server processes they spawn on it — killed at the
 * end if still running — and the database opened afterwards to check its rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { TEST_SECRET_KEY } from './harness.js';
import { type ServerProcess, spawnServer, waitHealthy } from './server-process.js';
import { adminQuery, databaseUrl, uniqueName } from './template.js';

export interface ContactAttempts {
  phone: string;
  status: string;
  executions: number;
  open: number;
  dials: number;
}

export class CrashRig {
  readonly dataDir: string;
  /** DATABASE_URL of the server pass (empty on PGlite: the server opens DATA_DIR). */
  #databaseEnv: Record<string, string> = {};
  #drop: () => Promise<void> = async () => {};
  readonly #started: ServerProcess[] = [];

  constructor(private readonly label: string) {
    this.dataDir = mkdtempSync(path.join(tmpdir(), `switchboard-${label}-`));
  }

  /** True on the PostgreSQL server pass. */
  get onServer(): boolean {
    return this.#databaseEnv.DATABASE_URL !== undefined;
  }

  /** For beforeAll: on the server pass, a database of this test's own. */
  async setUp(): Promise<void> {
    const template = inject('template');
    if (template.kind !== 'server') return;
    const name = uniqueName(`sb_${this.label.replace(/-/g, '_')}`);
    await adminQuery(template.adminUrl, `create database "${name}" template "${template.templateName}"`);
    this.#databaseEnv = { DATABASE_URL: databaseUrl(template.adminUrl, name) };
    this.#drop = () => adminQuery(template.adminUrl, `drop database if exists "${name}" with (force)`);
  }

  /** Starts `src/server.ts` on `port` with the rig's data and `env`, and waits until it is healthy. */
  async start(port: string, env: Record<string, string>): Promise<ServerProcess> {
    const server = spawnServer({
      DATA_DIR: this.dataDir,
      PORT: port,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      SECRET_KEY: TEST_SECRET_KEY,
      ...env,
      ...this.#databaseEnv,
    });
    this.#started.push(server);
    await waitHealthy(server, 60_000);
    return server;
  }

  /** The rig's database, opened from this process (after the servers stopped, on PGlite). */
  openDatabase(): Promise<Database> {
    const url = this.#databaseEnv.DATABASE_URL;
    return openDatabase(
      url ? { kind: 'server', url, poolSize: 1 } : { kind: 'embedded', dataDir: this.dataDir },
    );
  }

  /**
   * After the servers stopped (on PGlite): each contact of the campaign, in order, with its status,
   * its execution rows (and how many are still open) and how often the carrier was dialled for it
   * (`dialled`: the numbers of the carrier's calls) — what a kill test checks for lost or doubled work.
   */
  async contactAttempts(campaignId: number, dialled: string[]): Promise<ContactAttempts[]> {
    const database = await this.openDatabase();
    try {
      const { rows } = await database.executeSql(
        `select c.phone_number, c.status, count(e.id)::int as executions,
                count(e.id) filter (where e.status in ('pending', 'in_progress'))::int as open
           from campaign_contacts c left join campaign_executions e on e.contact_id = c.id
          where c.campaign_id = $1 group by c.id order by c.id`,
        [campaignId],
      );
      return rows.map((row) => ({
        phone: String(row.phone_number),
        status: String(row.status),
        executions: Number(row.executions),
        open: Number(row.open),
        dials: dialled.filter((number) => number === row.phone_number).length,
      }));
    } finally {
      await database.close();
    }
  }

  /** For afterAll: kills what still runs, drops the database, removes the data directory. */
  async tearDown(): Promise<void> {
    for (const server of this.#started) {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    }
    await this.#drop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
