/**
 * README.md works as written: the ```bash blocks of its "First steps" section (up to the next
 * level-2 heading; the install/start block above it is not run — this test starts the server) run,
 * in order and in one `bash -euo pipefail` session so that variables and functions carry across
 * blocks, against `npm start`'s server started here as a real process on a free port, with a fresh
 * DATA_DIR, the embedded database and default mail (files) and carrier settings.
 *
 * Two substitutions only: `127.0.0.1:8000` becomes the server's address, and the session runs in a
 * temporary directory whose `data` is the server's DATA_DIR — so `./data/mail/` is read as written.
 * One thing is stricter than a reader's terminal: `curl` fails on an HTTP error status (and prints
 * the answer), so a broken step fails on its own line instead of three steps later.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type ServerProcess, spawnServer, waitHealthy } from './support/server-process.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const SECTION = '## First steps';
const README_ADDRESS = '127.0.0.1:8000';
const RUN_TIMEOUT_MS = 90_000;

interface Block {
  /** 1-based README line of the block's first line (the one after the fence). */
  firstLine: number;
  lines: string[];
}

/** The ```bash blocks between the "First steps" heading and the next level-2 heading. */
function firstStepsBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(SECTION);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" heading`);
  const blocks: Block[] = [];
  let current: Block | undefined;
  for (let index = start + 1; index < lines.length; index++) {
    const line = lines[index] as string;
    if (current) {
      if (line.trimEnd() === '```') {
        blocks.push(current);
        current = undefined;
      } else current.lines.push(line);
    } else if (/^## /.test(line)) break;
    else if (line.trimEnd() === '```bash') current = { firstLine: index + 2, lines: [] };
  }
  if (current) throw new Error(`README.md: the bash block at line ${current.firstLine - 1} is not closed`);
  return blocks;
}

const PROLOGUE = [
  // The failing command's last line number and its status, for the report.
  `trap 'echo "::readme-step-failed:: $LINENO $?" >&2' ERR`,
  'curl() {',
  '  local body status=0',
  '  body=$(command curl --fail-with-body "$@") || status=$?',
  '  if [ "$status" -ne 0 ]; then printf \'curl failed (exit %s): %s\\n\' "$status" "$body" >&2; return "$status"; fi',
  '  printf \'%s\\n\' "$body"',
  '}',
];

interface RunResult {
  ok: boolean;
  output: string;
  /** When a step failed: its README lines (a command continued with `\` spans several). */
  failed?: { readmeLine: number; command: string; status: string };
}

/** Runs `blocks` in one bash session in `directory`, `127.0.0.1:8000` pointing at `address`. */
async function runBlocks(blocks: Block[], directory: string, address: string): Promise<RunResult> {
  const script = [...PROLOGUE];
  const readmeLineOf: (number | undefined)[] = script.map(() => undefined);
  const readmeText = new Map<number, string>();
  for (const block of blocks) {
    block.lines.forEach((line, offset) => {
      script.push(line.replaceAll(README_ADDRESS, address));
      readmeLineOf.push(block.firstLine + offset);
      readmeText.set(block.firstLine + offset, line);
    });
  }
  const file = path.join(directory, 'first-steps.sh');
  writeFileSync(file, `${script.join('\n')}\n`);

  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) childEnv[key] = value;
  const child = spawn('bash', ['-euo', 'pipefail', file], { cwd: directory, env: childEnv });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const timer = setTimeout(() => {
    output += `\n[killed: still running after ${RUN_TIMEOUT_MS} ms]\n`;
    child.kill('SIGKILL');
  }, RUN_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  if (code === 0) return { ok: true, output };

  const marker = /::readme-step-failed:: (\d+) (\d+)/.exec(output);
  const scriptLine = marker ? Number(marker[1]) : undefined;
  const last = scriptLine === undefined ? undefined : readmeLineOf[scriptLine - 1];
  if (last === undefined) return { ok: false, output };
  let first = last;
  while (readmeText.get(first - 1)?.endsWith('\\')) first -= 1;
  const command = Array.from({ length: last - first + 1 }, (_, i) => readmeText.get(first + i)).join('\n');
  return { ok: false, output, failed: { readmeLine: first, command, status: marker?.[2] ?? '?' } };
}

function report(result: RunResult): string {
  const where = result.failed
    ? `README.md line ${result.failed.readmeLine} failed (exit ${result.failed.status}):\n${result.failed.command}`
    : 'The README blocks failed';
  return `${where}\n--- output ---\n${result.output}`;
}

describe('README.md "First steps"', () => {
  const blocks = firstStepsBlocks(readFileSync(README, 'utf8'));
  let root: string;
  let server: ServerProcess;
  let address: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'switchboard-readme-'));
    const port = String(await freePort());
    // `npm start`'s defaults: embedded database, mail as files, generated secret key.
    server = spawnServer({
      PORT: port,
      DATA_DIR: path.join(root, 'data'),
      NODE_ENV: 'development',
      PUBLIC_URL: '',
      SMTP_URL: '',
      SECRET_KEY: '',
    });
    await waitHealthy(server, 90_000);
    address = `127.0.0.1:${port}`;
  });

  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('has bash blocks that talk to the documented address and read ./data', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const text = blocks.flatMap((block) => block.lines).join('\n');
    expect(text).toContain(`http://${README_ADDRESS}/`);
    expect(text).toContain('data/mail/');
    // The CLI cannot open the database a running server holds: no step may need it.
    expect(text).not.toMatch(/npm run\b|switchboard /);
  });

  it('runs every block, as written, against the running server', {
    timeout: RUN_TIMEOUT_MS + 10_000,
  }, async () => {
    const result = await runBlocks(blocks, root, address);
    expect(result.ok, report(result)).toBe(true);
    // What the steps print: the organization, the verification, the assistant listed with the key.
    expect(result.output).toContain("Ada's organization");
    expect(result.output).toContain('Email verified');
    expect(result.output).toMatch(/\[ '\d+ Front desk' \]/);
  });

  it('names the failing line when a step is broken (here: the mail read with a wrong label)', {
    timeout: RUN_TIMEOUT_MS + 10_000,
  }, async () => {
    // A second reader with another email, on the same server, whose token line is looked up wrongly.
    const broken = blocks.map((block) => ({
      ...block,
      lines: block.lines.map((line) =>
        line
          .replaceAll('you@example.com', 'broken@example.com')
          .replace('Verification token:', 'Verification code:'),
      ),
    }));
    const result = await runBlocks(broken, root, address);
    expect(result.ok).toBe(false);
    const verify = blocks
      .flatMap((block) => block.lines.map((line, offset) => ({ line, at: block.firstLine + offset })))
      .find(({ line }) => line.includes('/api/v1/auth/verify-email'));
    expect(verify).toBeDefined();
    expect(result.failed?.readmeLine, report(result)).toBe(verify?.at);
    // The API's refusal is in the report, not only curl's exit status.
    expect(result.output).toMatch(/curl failed \(exit 22\): \{"detail":\[\{"loc":\["body","token"\]/);
  });
});
