/**
 * `npm run demo` (scripts/demo.ts), run as the child process a developer starts: with nothing else
 * running and no set-up it places one live call through the simulators, prints the conversation as
 * the platform recorded it and each turn's latency breakdown, and exits 0.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEMO_UTTERANCES, utteranceTexts } from '../src/sim/demo-caller.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// What `npm run demo` runs (tsx scripts/demo.ts), without npm in between.
const DEMO = ['--import', 'tsx', 'scripts/demo.ts'];

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, DEMO, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A row of the turns table: position (with * when interrupted), kind, six figures or "-". */
const ROW = /^(\d+)(\*?) +([a-z_]+) +((?:(?:\d+|-) +){5}(?:\d+|-))$/gm;

describe('npm run demo', () => {
  it('places a call, prints both sides as they speak and a table of the turns, and exits 0', async () => {
    const { code, stdout, stderr } = await runDemo();
    expect(code, `${stdout}\n${stderr}`).toBe(0);

    // The caller's words, each on a "Caller:" line, in the order the demo caller says them.
    const texts = utteranceTexts();
    const callerLines = DEMO_UTTERANCES.map((name) => stdout.indexOf(`\nCaller: ${texts[name]}\n`));
    for (const [i, at] of callerLines.entries()) expect(at, DEMO_UTTERANCES[i]).toBeGreaterThan(0);
    expect([...callerLines].sort((a, b) => a - b)).toEqual(callerLines);
    // The assistant greets first and answers between the caller's lines.
    const greeting = stdout.indexOf('\nAssistant: Hello, Bright Smile Dental, how can I help you?\n');
    expect(greeting).toBeGreaterThan(0);
    expect(greeting).toBeLessThan(callerLines[0]!);
    expect(stdout.slice(callerLines.at(-1)!)).toMatch(/\nAssistant: .*Goodbye!\n/);
    expect(stdout.match(/^Assistant: \S.*$/gm)?.length).toBeGreaterThanOrEqual(5);

    expect(stdout).toMatch(/^turn +kind +end-to-end +endpointing +STT delay +LLM TTFT +TTS TTFB +platform$/m);
    const rows = [...stdout.matchAll(ROW)].map(([, position, star, kind, figures]) => ({
      position: Number(position),
      interrupted: star === '*',
      kind,
      figures: figures!.trim().split(/ +/),
    }));
    expect(rows[0]).toMatchObject({ position: 0, kind: 'greeting', interrupted: false });
    // The first answer is the one the caller cut into; every answer heard to its end has all six figures.
    expect(rows[1]).toMatchObject({ position: 1, kind: 'reply', interrupted: true });
    const heard = rows.filter((row) => row.kind === 'reply' && !row.interrupted);
    expect(heard.length).toBeGreaterThanOrEqual(3);
    for (const row of heard) for (const figure of row.figures) expect(figure).toMatch(/^\d+$/);
    // The endpointing wait is the assistant's setting (500 ms) or more.
    for (const row of heard) expect(Number(row.figures[1])).toBeGreaterThanOrEqual(500);
    expect(stdout).toMatch(/^\* interrupted: /m);

    expect(stdout).toContain('npm run sim');
    expect(stdout).toContain('docs/voice.md');
    expect(stderr).not.toContain('The demo failed');
  }, 150_000);
});
