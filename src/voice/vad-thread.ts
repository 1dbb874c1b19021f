/** Starts the VAD worker thread (vad-worker.ts) from wherever this code runs (lib/worker-thread.ts). */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../lib/worker-thread.js';
import type { WorkerSetup } from './vad-protocol.js';

export function startVadThread(setup: WorkerSetup): Worker {
  return startWorker(import.meta.url, './vad-worker', setup);
}
