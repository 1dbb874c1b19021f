/** Runs `src/server.ts` as a real child process, the way `npm start` does, for crash and restart tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts `script` (default: the Switchboard server) with the given environment. */
export function spawnServer(env: Record<string, string>, script = 'src/server.ts'): ServerProcess {
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    // The child chooses its own database: never inherit the test run's server settings.
    if (value !== undefined && key !== 'DATABASE_URL' && key !== 'TEST_DATABASE_URL') childEnv[key] = value;
  }
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...childEnv, LOG_LEVEL: 'warn', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, baseUrl: `http://127.0.0.1:${env.PORT}`, output: () => output, exited };
}

export async function waitHealthy(server: ServerProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null) throw new Error(`server exited: ${server.output()}`);
    try {
      const response = await fetch(`${server.baseUrl}/health`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`server not healthy after ${timeoutMs} ms: ${server.output()}`);
}

/** A JSON request to a spawned server, with an optional bearer token: its status and parsed body. */
export async function serverRequest(
  server: Pick<ServerProcess, 'baseUrl'>,
  method: string,
  url: string,
  options: { token?: string; body?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.baseUrl}${url}`, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}
