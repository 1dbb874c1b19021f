/**
 * The Talk page's AudioWorklet modules. An AudioWorklet loads its processor by URL into the audio
 * rendering thread, so each is its own esbuild entry point (never a chunk of the app): the console
 * build adds these to its entry points, `{ in, out }` as esbuild takes them, paths relative to
 * `console/`, and serves them next to the app under their `out` names (`<out>.js`).
 *
 * Plain data with no DOM types, so the server's build (Node) can import it too.
 */
export const TALK_WORKLET_ENTRY_POINTS = {
  'talk-capture': 'src/talk/capture-worklet.ts',
  'talk-playback': 'src/talk/playback-worklet.ts',
} as const;

export type TalkWorklet = keyof typeof TALK_WORKLET_ENTRY_POINTS;

/** Where the console serves its built assets; `WebCall` loads the worklets from here by default. */
export const DEFAULT_WORKLET_BASE = '/console/assets/';
