/** The `switchboard` operator command. */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, UsageError } from '../src/cli.js';
import { acquireEmbeddedLock } from '../src/db/embedded-lock.js';
import { VERSION } from '../src/version.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.join(ROOT, 'bin/switchboard.mjs');

function captureIo() {
  const io = {
    stdout: '',
    stderr: '',
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
  };
  return io;
}

let t: TestPlatform;
let factories: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  factories = new Factories(t);
});
afterAll(() => t.close());

describe('commands on the database', () => {
  it('migrate reports nothing left to apply on a migrated database', async () => {
    const io = captureIo();
    expect(await runCommand(['migrate'], t.database, io)).toBe(0);
    expect(io.stdout).toMatch(/Applied 0 migration\(s\); \d+ in total/);
  });

  it('users verify marks the email verified, and a running server drops its cached view of the user', async () => {
    const user = await factories.user({ verified: false });
    const before = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: user.headers });
    expect(before.json().is_verified).toBe(false);

    const io = captureIo();
    expect(await runCommand(['users', 'verify', user.email.toUpperCase()], t.database, io)).toBe(0);
    expect(io.stdout).toContain(user.email);

    // The CLI runs beside the server: the server's cached principal learns of it through NOTIFY.
    await waitFor(async () => {
      const whoami = await t.app.inject({ method: 'GET', url: '/api/v1/auth/whoami', headers: user.headers });
      return whoami.json().is_verified === true;
    }, 5000);
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      headers: user.headers,
      payload: { name: 'after verify' },
    });
    expect(created.statusCode).toBe(201);
  });

  it('users make-admin promotes a member, in one organization or all', async () => {
    const admin = await factories.user();
    const member = await factories.member(admin.organizationId, 'user');
    expect(member.role).toBe('user');

    const io = captureIo();
    expect(
      await runCommand(
        ['users', 'make-admin', member.email, '--organization', String(admin.organizationId)],
        t.database,
        io,
      ),
    ).toBe(0);
    expect(io.stdout).toMatch(/now admin in 1 organization/);
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: member.headers });
    expect(me.json().role).toBe('admin');
  });

  it('answers 1 for an unknown user or organization, and usage errors for bad arguments', async () => {
    const io = captureIo();
    expect(await runCommand(['users', 'verify', 'nobody@example.test'], t.database, io)).toBe(1);
    expect(io.stderr).toMatch(/No user with email/);

    const user = await factories.user();
    expect(
      await runCommand(['users', 'make-admin', user.email, '--organization', '999999'], t.database, io),
    ).toBe(1);
    expect(io.stderr).toMatch(/not a member of organization 999999/);

    await expect(runCommand(['users', 'verify'], t.database, io)).rejects.toBeInstanceOf(UsageError);
    await expect(runCommand(['frobnicate'], t.database, io)).rejects.toBeInstanceOf(UsageError);
    await expect(
      runCommand(['users', 'make-admin', user.email, '--organization', 'abc'], t.database, io),
    ).rejects.toBeInstanceOf(UsageError);
  });
});

describe('compliance set PHONE_NUMBER_ID STATUS [REASON]', () => {
  async function submittedNumber(phoneNumber: string) {
    const user = await factories.user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: user.headers,
      payload: { phone_number: phoneNumber, provider: 'carrier_a' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id: number = created.json().id;
    const submitted = await t.app.inject({
      method: 'POST',
      url: '/v1/sms-compliance/submit',
      headers: user.headers,
      payload: {
        phone_number_id: id,
        use_case: 'customer_support',
        business_name: 'Acme',
        business_description: 'Support replies',
        sample_messages: ['Your ticket #12 was answered.'],
      },
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
    const status = async () =>
      (
        await t.app.inject({ method: 'GET', url: `/v1/sms-compliance/status/${id}`, headers: user.headers })
      ).json();
    return { user, id, status };
  }

  it("sets any status of any organization's submitted number, without a reviewer; rejected takes the rest as REASON", async () => {
    const { user, id, status } = await submittedNumber('+14155557001');
    const io = captureIo();
    expect(await runCommand(['compliance', 'set', String(id), 'approved'], t.database, io)).toBe(0);
    expect(io.stdout).toContain(`phone number ${id} (organization ${user.organizationId}) is now approved`);
    expect(await status()).toMatchObject({ status: 'approved', can_send_outbound: true });
    const { rows } = await t.database.executeSql(
      'select reviewed_by_user_id, approved_at from sms_compliance where phone_number_id = $1',
      [id],
    );
    expect(rows[0]?.reviewed_by_user_id).toBeNull();
    expect(rows[0]?.approved_at).not.toBeNull();

    expect(
      await runCommand(
        ['compliance', 'set', String(id), 'rejected', 'No', 'opt-out', 'text'],
        t.database,
        io,
      ),
    ).toBe(0);
    expect(await status()).toMatchObject({
      status: 'rejected',
      rejection_reason: 'No opt-out text',
      approved_at: null,
    });
    expect(await runCommand(['compliance', 'set', String(id), 'pending'], t.database, io)).toBe(0);
    expect(await status()).toMatchObject({ status: 'pending', rejection_reason: null });
  });

  it('answers 1 for an unknown number or one never submitted, and usage errors for bad arguments', async () => {
    const io = captureIo();
    expect(await runCommand(['compliance', 'set', '2147483647', 'approved'], t.database, io)).toBe(1);
    expect(io.stderr).toMatch(/Phone number not found/);
    const user = await factories.user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: user.headers,
      payload: { phone_number: '+14155557002', provider: 'carrier_b' },
    });
    const id = String(created.json().id);
    expect(await runCommand(['compliance', 'set', id, 'approved'], t.database, io)).toBe(1);
    expect(io.stderr).toMatch(/has no SMS compliance submission/);

    for (const args of [
      ['compliance', 'set'],
      ['compliance', 'set', id],
      ['compliance', 'set', id, 'approve'],
      ['compliance', 'set', id, 'not_submitted'],
      ['compliance', 'set', id, 'rejected'],
      ['compliance', 'set', id, 'rejected', '  '],
      ['compliance', 'set', id, 'approved', 'because'],
      ['compliance', 'set', '0', 'approved'],
      ['compliance', 'set', 'abc', 'approved'],
      ['compliance', 'set', '2147483648', 'approved'],
      ['compliance', 'get', id],
    ]) {
      await expect(runCommand(args, t.database, io), args.join(' ')).rejects.toBeInstanceOf(UsageError);
    }
  });
});

describe('the switchboard binary', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-cli-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' };
  // A DATA_DIR that does not exist: commands that need no database must leave it so.
  const absentDir = path.join(dataDir, 'absent');
  const absentEnv = { ...env, DATA_DIR: absentDir };

  it('prints the OpenAPI document', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'openapi'], {
      cwd: ROOT,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    const document = JSON.parse(stdout);
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/api/v1/auth/login');
    // Complete even when larger than a pipe buffer: the routes registered last are there too.
    expect(stdout.length).toBeGreaterThan(65_536);
    expect(Object.keys(document.paths)).toContain('/api/v1/organization/fallback-keys/{provider}/{key_id}');
  }, 60_000);

  it('prints usage and exits 2 on an unknown command', async () => {
    const failure = await run(process.execPath, [BIN, 'frobnicate'], { cwd: ROOT, env }).catch((e) => e);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toMatch(/Unknown command: frobnicate/);
    expect(failure.stderr).toMatch(/Usage: switchboard/);
  }, 60_000);

  it('says which option or argument it does not know, with the usage of that command, and exits 2', async () => {
    for (const [args, message, usage] of [
      [['migrate', '--force'], /Unknown option for migrate: --force/, /Usage: switchboard migrate\n/],
      [['users', 'frobnicate'], /Unknown command: users frobnicate/, /Usage: switchboard users make-admin/],
      [['users'], /users needs a subcommand: verify, make-admin/, /Usage: switchboard users verify EMAIL/],
      [['users', 'verify', 'a@example.test', 'b@example.test'], /Unexpected argument .*b@example/, /EMAIL/],
      [
        ['users', 'make-admin', 'a@example.test', '--org', '1'],
        /Unknown option .*: --org$/m,
        /--organization/,
      ],
      [['--frobnicate'], /Unknown option: --frobnicate/, /Commands:/],
      [['help', 'frobnicate'], /Unknown command: frobnicate/, /Commands:/],
      [['--version', 'now'], /--version takes no arguments/, /Commands:/],
      [[], /No command given/, /Commands:/],
    ] as const) {
      const failure = await run(process.execPath, [BIN, ...args], { cwd: ROOT, env: absentEnv }).catch(
        (e) => e,
      );
      expect(failure.code, args.join(' ')).toBe(2);
      expect(failure.stderr, args.join(' ')).toMatch(message);
      expect(failure.stderr, args.join(' ')).toMatch(usage);
      expect(failure.stdout).toBe('');
    }
    expect(existsSync(absentDir)).toBe(false);
  }, 120_000);

  it('prints its version with --version and -v, without configuration or a database', async () => {
    for (const flag of ['--version', '-v']) {
      const { stdout, stderr } = await run(process.execPath, [BIN, flag], { cwd: ROOT, env: absentEnv });
      expect(stdout).toBe(`${VERSION}\n`);
      expect(stderr).toBe('');
    }
    expect(existsSync(absentDir)).toBe(false);
  }, 60_000);

  it('prints the usage of one command for help COMMAND and COMMAND --help, exit 0, opening nothing', async () => {
    // The database is locked by this process: a help that opened it would fail.
    const release = acquireEmbeddedLock(dataDir);
    try {
      for (const args of [
        ['help', 'users', 'make-admin'],
        ['users', 'make-admin', '--help'],
        ['users', 'make-admin', 'someone@example.test', '--organization', '3', '-h'],
      ]) {
        const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: ROOT, env });
        expect(stdout, args.join(' ')).toMatch(
          /^Usage: switchboard users make-admin EMAIL \[--organization ID\]\n/,
        );
        expect(stdout, args.join(' ')).toMatch(/--organization ID +Only in this organization/);
        expect(stdout, args.join(' ')).not.toMatch(/users verify|billing grant/);
        expect(stderr).toBe('');
      }
      const group = await run(process.execPath, [BIN, 'billing', '--help'], { cwd: ROOT, env });
      expect(group.stdout).toMatch(/^Usage: switchboard billing grant ORG_ID AMOUNT\n/);
      const all = await run(process.execPath, [BIN, '--help'], { cwd: ROOT, env: absentEnv });
      for (const command of [
        'migrate',
        'users verify',
        'users make-admin',
        'billing grant',
        'compliance set',
        'openapi',
      ]) {
        expect(all.stdout).toContain(`  ${command}`);
      }
      expect(all.stdout).toMatch(/switchboard --version/);
    } finally {
      release();
    }
    expect(existsSync(absentDir)).toBe(false);
  }, 120_000);

  it('exits 0 without a word when the reader of its output has gone (openapi | head)', async () => {
    const child = spawn(process.execPath, [BIN, '--help'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Like `| head -0`: the reading end of the pipe is closed before the command writes to it, so its
    // write fails with EPIPE, as the rest of `openapi | head -1` does once head has its line.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.on('close', (exitCode) => resolve(exitCode)));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  }, 60_000);

  it('refuses to work on a DATA_DIR without a database and creates nothing there; migrate creates it', async () => {
    const empty = path.join(dataDir, 'fresh');
    mkdirSync(path.join(empty, 'mail'), { recursive: true });
    for (const [where, directory] of [
      ['a missing DATA_DIR', absentDir],
      ['a DATA_DIR without a database', empty],
    ] as const) {
      const failure = await run(process.execPath, [BIN, 'users', 'verify', 'someone@example.test'], {
        cwd: ROOT,
        env: { ...env, DATA_DIR: directory },
      }).catch((e) => e);
      expect(failure.code, where).toBe(1);
      expect(failure.stderr, where).toContain(`No Switchboard database in ${directory} (DATA_DIR)`);
      expect(failure.stderr, where).toMatch(
        /`npm start` creates\s+it on its first start, `switchboard migrate`/,
      );
      expect(failure.stderr, where).not.toMatch(/\n\s+at /);
    }
    expect(existsSync(absentDir)).toBe(false);
    expect(readdirSync(empty)).toEqual(['mail']);

    const migrated = await run(process.execPath, [BIN, 'migrate'], {
      cwd: ROOT,
      env: { ...env, DATA_DIR: empty },
    });
    expect(migrated.stdout).toMatch(/Applied [1-9]\d* migration\(s\)/);
    const unknown = await run(process.execPath, [BIN, 'users', 'verify', 'someone@example.test'], {
      cwd: ROOT,
      env: { ...env, DATA_DIR: empty },
    }).catch((e) => e);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No user with email someone@example.test/);
  }, 120_000);

  it('refuses to open an embedded database another process holds', async () => {
    const release = acquireEmbeddedLock(dataDir); // this test process plays the running server
    try {
      const failure = await run(process.execPath, [BIN, 'migrate'], { cwd: ROOT, env }).catch((e) => e);
      expect(failure.code).toBe(1);
      expect(failure.stderr).toMatch(new RegExp(`in use by process ${process.pid}`));
    } finally {
      release();
    }
  }, 60_000);
});
