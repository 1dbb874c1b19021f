/**
 * A call's recorder that also tells the call's watcher (`MediaConnection.watch`) what it records, at
 * the moment the session records it: the browser of a web call sees its transcript, its turns and
 * their latencies, and its interruptions live, from the very records the call keeps. The watcher
 * only looks: a watcher that throws is ignored, and the records are written as before.
 */
import type { CallRecorder } from './session-spec.js';
import type { CallWatcher } from './transport.js';

export function watchedRecorder(recorder: CallRecorder, watch: CallWatcher | undefined): CallRecorder {
  if (!watch) return recorder;
  const tell = (notify: () => void) => {
    try {
      notify();
    } catch {
      // Watching is best effort: the call and its records go on.
    }
  };
  return {
    ...recorder,
    transcript(segment) {
      tell(() => watch.transcript({ speaker: segment.speaker, text: segment.text }));
      return recorder.transcript(segment);
    },
    turn(turn) {
      tell(() => watch.turn(turn));
      return recorder.turn(turn);
    },
    event(type, data) {
      tell(() => watch.event(type, data));
      return recorder.event(type, data);
    },
  };
}
