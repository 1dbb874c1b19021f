/**
 * Starts the VAD worker thread from wherever this code runs. Under tsx (`npm start`) and vitest the
 * sources are .ts files, and Node 20 applies no ESM loader hooks inside worker threads (neither an
 * inherited `--import tsx` nor one in `execArgv` lets a worker import a .ts file), so the worker is
 * a small CommonJS bootstrap that installs tsx's require hook in the thread and then requires
 * vad-worker.ts (tsx compiles it, and its `.js` imports, to CommonJS). Compiled to JavaScript, the
 * worker file is started as it is.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { WorkerSetup } from './vad-protocol.js';

const require = createRequire(import.meta.url);

export function startVadThread(setup: WorkerSetup): Worker {
  const own = new URL(import.meta.url);
  if (own.pathname.endsWith('.ts')) {
    const workerFile = fileURLToPath(new URL('./vad-worker.ts', own));
    const tsxHook = require.resolve('tsx/cjs');
    const bootstrap = `require(${JSON.stringify(tsxHook)}); require(${JSON.stringify(workerFile)});`;
    return new Worker(bootstrap, { eval: true, workerData: setup });
  }
  return new Worker(new URL('./vad-worker.js', own), { workerData: setup });
}
