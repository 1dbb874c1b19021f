/**
 * Time from process start to a 200 from GET /health: Switchboard on a fresh DATA_DIR (first start
 * creates the embedded database) and on a warm one (restart), beside a bare Fastify process started
 * the same way (node + tsx) in the same run. Acceptance: a fresh start is healthy within 15 s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, type ServerProcess, spawnServer, waitHealthy } from '../test/support/server-process.js';
import { median, table } from './support.js';

async function timeToHealthy(start: () => ServerProcess): Promise<number> {
  const began = performance.now();
  const server = start();
  await waitHealthy(server, 120_000);
  const elapsed = performance.now() - began;
  server.child.kill('SIGTERM');
  await server.exited;
  return elapsed;
}

export async function run(args: string[]): Promise<void> {
  const rounds = Number(args[0] ?? 3);
  const bare: number[] = [];
  const fresh: number[] = [];
  const warm: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-startup-'));
    const port = String(await freePort());
    bare.push(await timeToHealthy(() => spawnServer({ PORT: port }, 'bench/fixtures/bare-server.ts')));
    fresh.push(await timeToHealthy(() => spawnServer({ PORT: port, DATA_DIR: dataDir })));
    warm.push(await timeToHealthy(() => spawnServer({ PORT: port, DATA_DIR: dataDir })));
    rmSync(dataDir, { recursive: true, force: true });
  }
  const baseline = median(bare);
  const row = (name: string, samples: number[]) => ({
    start: name,
    'median ms': Math.round(median(samples)),
    'max ms': Math.round(Math.max(...samples)),
    'ratio to bare': Number((median(samples) / baseline).toFixed(1)),
  });
  table([
    row('bare Fastify process (baseline)', bare),
    row('Switchboard, fresh DATA_DIR', fresh),
    row('Switchboard, restart', warm),
  ]);
  console.log(
    `startup: fresh ${(median(fresh) / 1000).toFixed(1)} s (max ${(Math.max(...fresh) / 1000).toFixed(1)} s, goal ≤ 15 s), restart ${(median(warm) / 1000).toFixed(1)} s, bare Fastify ${(baseline / 1000).toFixed(1)} s — fresh/bare ratio ${(median(fresh) / baseline).toFixed(1)}`,
  );
}
