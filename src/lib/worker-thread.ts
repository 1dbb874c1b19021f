/**
 * Starts a worker thread from a module beside the caller, wherever this code runs. Under tsx
 * (`npm start`) and vitest the sources are .ts files, and Node 20 applies no ESM loader hooks inside
 * worker threads (neither an inherited `--import tsx` nor one in `execArgv` lets a worker import a
 * .ts file), so the worker is a small CommonJS bootstrap that installs tsx's require hook in the
 * thread and then requires the .ts module (tsx compiles it, and its `.js` imports, to CommonJS).
 * Compiled to JavaScript, the worker file is started as it is.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { type TransferListItem, Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

/**
 * `module` names the worker's file relative to `caller` (the caller's `import.meta.url`) without its
 * extension, e.g. `./vad-worker`.
 */
export function startWorker(
  caller: string,
  module: string,
  workerData: unknown,
  transferList: readonly TransferListItem[] = [],
): Worker {
  const own = new URL(caller);
  const options = { workerData, transferList: [...transferList] };
  if (own.pathname.endsWith('.ts')) {
    const workerFile = fileURLToPath(new URL(`${module}.ts`, own));
    const tsxHook = require.resolve('tsx/cjs');
    const bootstrap = `require(${JSON.stringify(tsxHook)}); require(${JSON.stringify(workerFile)});`;
    return new Worker(bootstrap, { ...options, eval: true });
  }
  return new Worker(new URL(`${module}.js`, own), options);
}
