/** `npm run sim` (src/sim/run.ts), run as the child process a developer starts. */
import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
// What `npm run sim` runs (tsx src/sim/run.ts), without npm in between.
const SIM = ['--import', 'tsx', 'src/sim/run.ts'];

function listen(port: number): Promise<Server | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function close(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}

describe('npm run sim', () => {
  it('--help prints the usage and exits 0', async () => {
    const { stdout, stderr } = await run(process.execPath, [...SIM, '--help'], { cwd: ROOT });
    expect(stdout).toMatch(/^Usage: npm run sim \[-- FIRST_PORT\]\n/);
    expect(stdout).toMatch(/eleven consecutive\s+ports from FIRST_PORT \(default 4010: ports 4010-4020\)/);
    expect(stderr).toBe('');
  }, 60_000);

  it('refuses a port that is no port with the usage, exit 2', async () => {
    const failure = await run(process.execPath, [...SIM, 'ten'], { cwd: ROOT }).catch((e) => e);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toMatch(/Not a port: ten\n\nUsage: npm run sim/);
  }, 60_000);

  describe('on a port in use', () => {
    let taken: Server | undefined;
    let port = 0;
    beforeAll(async () => {
      taken = await listen(0);
      const address = taken?.address();
      port = typeof address === 'object' && address ? address.port : 0;
    });
    afterAll(() => close(taken));

    it('says which port is taken and how to choose others, exit 1, no stack trace', async () => {
      // The taken port is the second of the eleven: carrier A's port is tried too, and nothing stays up.
      const failure = await run(process.execPath, [...SIM, String(port - 1)], { cwd: ROOT }).catch((e) => e);
      expect(failure.code).toBe(1);
      expect(failure.stderr).toContain(
        `Port ${port} (the carrier B simulator) is already in use on 127.0.0.1`,
      );
      expect(failure.stderr).toMatch(/Choose other ports with: npm run sim -- FIRST_PORT/);
      expect(failure.stderr).not.toMatch(/\n\s+at |Error:/);
      expect(failure.stdout).toBe('');
    }, 60_000);
  });

  it('starts the eleven simulators on the ports it is given and stops on SIGTERM', async () => {
    // Eleven consecutive free ports: a free one from the system, with its ten neighbours checked.
    let first = 0;
    for (let attempt = 0; attempt < 20 && first === 0; attempt++) {
      const probe = await listen(0);
      const address = probe?.address();
      const candidate = typeof address === 'object' && address ? address.port : 0;
      await close(probe);
      if (candidate === 0 || candidate > 65525) continue;
      const held = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => listen(candidate + i)));
      await Promise.all(held.map(close));
      if (held.every(Boolean)) first = candidate;
    }
    expect(first).not.toBe(0);

    const child = spawn(process.execPath, [...SIM, String(first)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const deadline = Date.now() + 50_000;
    while (!stdout.includes('Stop with Ctrl-C.') && Date.now() < deadline && child.exitCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(stdout, stderr).toContain('are running');
    for (const [name, offset] of [
      ['CARRIER_A_BASE_URL', 0],
      ['CARRIER_B_BASE_URL', 1],
      ['CARRIER_C_BASE_URL', 2],
      ['LAMBDA_ENDPOINT_URL', 3],
      ['STT_BASE_URL', 4],
      ['LLM_A_BASE_URL', 5],
      ['LLM_B_BASE_URL', 5],
      ['TTS_A_BASE_URL', 6],
      ['TTS_B_BASE_URL', 7],
      ['TTS_C_BASE_URL', 8],
      ['TTS_D_BASE_URL', 9],
      ['EMBEDDINGS_BASE_URL', 10],
    ] as const) {
      expect(stdout).toContain(`${name}=http://127.0.0.1:${first + offset}`);
      // Listening: the port cannot be taken now.
      expect(await listen(first + offset)).toBeUndefined();
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});
