/**
 * `npm start` on the embedded database, as a real process: it comes up with no set-up, a kill -9
 * loses no committed row, a second process is refused by the lock, SIGTERM stops it cleanly, and a
 * SIP port another program holds leaves the rest of the platform running.
 */
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, spawnServer, waitHealthy } from './support/server-process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-embedded-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function post(baseUrl: string, url: string, body: unknown) {
  const response = await fetch(`${baseUrl}${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('embedded server process', () => {
  const account = {
    email: 'crash.test@example.test',
    password: 'survives kill -9',
    first_name: 'C',
    last_name: 'K',
  };

  it('starts on a fresh DATA_DIR, keeps committed rows through kill -9, and refuses a second process', async () => {
    const port = String(await freePort());
    const first = spawnServer({ DATA_DIR: dataDir, PORT: port });
    await waitHealthy(first, 90_000);
    expect(statSync(path.join(dataDir, 'secret.key')).mode & 0o777).toBe(0o600);

    const registered = await post(first.baseUrl, '/api/v1/auth/register', account);
    expect(registered.status).toBe(201);

    const second = spawnServer({ DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/in use by process \d+/);

    first.child.kill('SIGKILL');
    await first.exited;
    expect(existsSync(path.join(dataDir, 'switchboard.lock'))).toBe(true); // left behind by the kill

    const restarted = spawnServer({ DATA_DIR: dataDir, PORT: port });
    await waitHealthy(restarted, 90_000);
    const login = await post(restarted.baseUrl, '/api/v1/auth/login', {
      email: account.email,
      password: account.password,
    });
    expect(login.status).toBe(200);
    expect((login.body.user as { id: number }).id).toBe((registered.body.user as { id: number }).id);

    restarted.child.kill('SIGTERM');
    expect(await restarted.exited).toBe(0);
    expect(existsSync(path.join(dataDir, 'switchboard.lock'))).toBe(false);
  }, 240_000);

  it('serves everything else when its SIP port is taken, and its log says so', async () => {
    const taken = createSocket('udp4');
    const sipPort = await new Promise<number>((resolve) =>
      taken.bind(0, '127.0.0.1', () => resolve(taken.address().port)),
    );
    const ownDir = mkdtempSync(path.join(tmpdir(), 'switchboard-sip-taken-'));
    const server = spawnServer({
      DATA_DIR: ownDir,
      PORT: String(await freePort()),
      SIP_PORT: String(sipPort),
    });
    try {
      await waitHealthy(server, 60_000);
      expect(server.output()).toMatch(/the SIP agent could not start/);
      // Stopped as soon as it answers — the console may still be building —, it stops cleanly (a
      // signal nobody handles would end it with no exit code).
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      taken.close();
      rmSync(ownDir, { recursive: true, force: true });
    }
  }, 90_000);

  it('refuses to start with a bad configuration value and names the variable', async () => {
    const server = spawnServer({ DATA_DIR: dataDir, PORT: 'eighty' });
    expect(await server.exited).toBe(1);
    expect(server.output()).toMatch(/PORT must be an integer/);
  }, 60_000);
});
