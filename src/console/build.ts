/**
 * The web console's build: esbuild bundles `console/src` (Preact, TypeScript, CSS) in memory when the
 * console is first asked for — at `npm start` the server asks right after it listens, so a broken build
 * shows in the start-up log, and a process that never serves the console (a test, a worker) never
 * builds it. Nothing is written to disk and nothing built is committed: a clone has only sources.
 *
 * Assets keep stable names (`/console/assets/app.js`) and are revalidated by ETag rather than named by
 * hash: the console is one small bundle on the operator's own server, and AudioWorklet modules are
 * loaded by URL from code that would otherwise need the hashed names passed in.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { TALK_WORKLET_ENTRY_POINTS } from '../../console/src/talk/entries.js';

export interface ConsoleAsset {
  body: Buffer;
  /** The same, gzipped once at build time, for browsers that accept it (all do). */
  gzipped: Buffer;
  contentType: string;
  etag: string;
}

/** The built console: its assets by name (`app.js`, `app.css`, …) and its one HTML page. */
export interface ConsoleBundle {
  assets: ReadonlyMap<string, ConsoleAsset>;
  page: ConsoleAsset;
  /** How long the build took, for the start-up log. */
  buildMs: number;
}

export const CONSOLE_ROOT = fileURLToPath(new URL('../../console/', import.meta.url));
/** Where the console is served from; its client-side routes live under it too. */
export const CONSOLE_BASE = '/console';

/**
 * The bundles: the application, and the AudioWorklet modules the Talk page loads by URL (they run in
 * the audio rendering thread, so they are separate entry points, not chunks of the app).
 */
const ENTRY_POINTS = {
  app: 'src/main.tsx',
  ...TALK_WORKLET_ENTRY_POINTS,
} as const;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function asset(body: Buffer | Uint8Array, contentType: string): ConsoleAsset {
  const buffer = Buffer.from(body);
  const etag = `"${createHash('sha256').update(buffer).digest('base64url').slice(0, 22)}"`;
  return { body: buffer, gzipped: gzipSync(buffer, { level: 9 }), contentType, etag };
}

function typeOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return TYPES[name.slice(dot)] ?? 'application/octet-stream';
}

/** The page every console route answers with; the app takes over from the URL it finds. */
function page(assets: ReadonlyMap<string, ConsoleAsset>): string {
  const version = (name: string) => `${CONSOLE_BASE}/assets/${name}?v=${assets.get(name)?.etag.slice(1, 9)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${version('app.css')}">
<script type="module" src="${version('app.js')}"></script>
</head>
<body>
<div id="app"><noscript>The Switchboard console needs JavaScript. The API is at /docs.</noscript></div>
</body>
</html>
`;
}

export async function buildConsole(root: string = CONSOLE_ROOT): Promise<ConsoleBundle> {
  const started = performance.now();
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.entries(ENTRY_POINTS).map(([out, source]) => ({ in: source, out })),
    outdir: 'out',
    bundle: true,
    write: false,
    format: 'esm',
    splitting: false,
    minify: true,
    sourcemap: 'linked',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    logLevel: 'silent',
    legalComments: 'none',
  });
  const assets = new Map<string, ConsoleAsset>();
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    assets.set(name, asset(file.contents, typeOf(name)));
  }
  for (const required of ['app.js', 'app.css']) {
    if (!assets.has(required)) throw new Error(`The console build made no ${required}`);
  }
  return {
    assets,
    page: asset(Buffer.from(page(assets)), 'text/html; charset=utf-8'),
    buildMs: Math.round(performance.now() - started),
  };
}

/** One build per process, made when first needed; a failed build is retried on the next request. */
export class ConsoleBuilds {
  #bundle: Promise<ConsoleBundle> | undefined;

  constructor(private readonly build: () => Promise<ConsoleBundle> = () => buildConsole()) {}

  get(): Promise<ConsoleBundle> {
    if (!this.#bundle) {
      this.#bundle = this.build();
      this.#bundle.catch(() => {
        this.#bundle = undefined;
      });
    }
    return this.#bundle;
  }
}
