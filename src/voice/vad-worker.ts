/**
 * The VAD worker thread: holds the process's one SileroModel (vad-model.ts) and answers the engine's
 * messages (vad-protocol.ts). It exists because onnxruntime-node's `session.run` blocks the thread
 * it runs on: on the main thread a hundred calls would stall every call's sockets ~10 ms every
 * 32 ms. Messages are handled strictly in arrival order, so each call's windows are judged in the
 * order its audio came and a close or a count never overtakes windows sent before it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorText, SileroModel } from './vad-model.js';
import type { FromWorker, ToWorker, WorkerSetup } from './vad-protocol.js';

const port = parentPort!;
const setup = workerData as WorkerSetup;

function send(message: FromWorker): void {
  port.postMessage(message);
}

async function handle(model: SileroModel, message: ToWorker): Promise<void> {
  if (message.type === 'close') model.forget(message.id);
  else if (message.type === 'count')
    send({ type: 'count', requestId: message.requestId, streams: model.calls });
  else {
    const rounds = [];
    for (const round of message.rounds)
      rounds.push({ ids: round.ids, probabilities: await model.run(round) });
    send({ type: 'result', rounds });
  }
}

const loading = SileroModel.load(setup.modelPath).then(
  (model) => {
    send({ type: 'ready' });
    return model;
  },
  (error: unknown) => {
    send({ type: 'failed', message: errorText(error) });
    return undefined;
  },
);

// One chain: messages that arrive while the model loads wait their turn, and no message overtakes
// another (session.run is async, so plain handlers could interleave).
let queue: Promise<void> = Promise.resolve();
port.on('message', (message: ToWorker) => {
  queue = queue
    .then(async () => {
      const model = await loading;
      if (model) await handle(model, message);
    })
    .catch((error: unknown) =>
      send({ type: 'failed', message: `VAD inference failed: ${errorText(error)}` }),
    );
});
