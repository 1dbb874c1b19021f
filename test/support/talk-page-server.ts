/**
 * A loopback HTTP server for the Talk page's browser tests: it serves a test page and the Talk
 * worklets, bundled in memory by esbuild from their sources, and plays the platform's side of the
 * web-call protocol on `/web-call/{id}` — a protocol peer the test drives message by message, so the
 * browser side is tested on its own, against the protocol rather than against the server's code.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import { type WebSocket, WebSocketServer } from 'ws';
import { TALK_WORKLET_ENTRY_POINTS } from '../../console/src/talk/entries.js';

/** What the peer got from the browser, in order, with its arrival time (performance.now()). */
export type PeerMessage =
  | { at: number; kind: 'text'; message: { type: string; [field: string]: unknown } }
  | { at: number; kind: 'binary'; bytes: Buffer };

export class PeerSocket {
  readonly received: PeerMessage[] = [];
  readonly closed: Promise<{ code: number }>;
  #waiters = new Set<() => void>();

  constructor(
    readonly socket: WebSocket,
    readonly path: string,
  ) {
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      const at = performance.now();
      this.received.push(
        isBinary
          ? { at, kind: 'binary', bytes: data }
          : { at, kind: 'text', message: JSON.parse(data.toString()) },
      );
      for (const waiter of this.#waiters) waiter();
    });
    this.closed = once(socket, 'close').then(([code]) => ({ code: code as number }));
  }

  get texts(): { at: number; message: { type: string; [field: string]: unknown } }[] {
    return this.received.flatMap((entry) => (entry.kind === 'text' ? [entry] : []));
  }

  get frames(): { at: number; bytes: Buffer }[] {
    return this.received.flatMap((entry) => (entry.kind === 'binary' ? [entry] : []));
  }

  /** Waits for a text message of `type` (and `test`, when given) from the browser. */
  text(
    type: string,
    test: (message: Record<string, unknown>) => boolean = () => true,
    timeoutMs = 10_000,
  ): Promise<{ at: number; message: Record<string, unknown> }> {
    return this.until(
      () => this.texts.find((entry) => entry.message.type === type && test(entry.message)),
      timeoutMs,
    );
  }

  /** Waits until `find` returns something, re-checking at every message. */
  until<T>(find: () => T | undefined, timeoutMs = 10_000): Promise<T> {
    const found = find();
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`the browser did not send what the test waits for within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        const value = find();
        if (value === undefined) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(value);
      };
      this.#waiters.add(check);
    });
  }

  send(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(message));
  }

  /** Sends audio in 20 ms binary frames (640 bytes of 16 kHz s16le), all at once. */
  sendAudio(pcm: Buffer): void {
    for (let offset = 0; offset < pcm.length; offset += 640)
      this.socket.send(pcm.subarray(offset, offset + 640));
  }
}

export interface TalkPageServer {
  url: string;
  socketUrl(callId: number): string;
  /** The next web-call socket the browser opens. */
  nextSocket(): Promise<PeerSocket>;
  close(): Promise<void>;
}

/** Builds the page and the worklets (esbuild, in memory) and serves them on a free loopback port. */
export async function startTalkPageServer(): Promise<TalkPageServer> {
  const bundle = await build({
    absWorkingDir: process.cwd(),
    entryPoints: [
      { in: 'test/browser/talk-page.ts', out: 'talk-page' },
      ...Object.entries(TALK_WORKLET_ENTRY_POINTS).map(([out, source]) => ({ in: `console/${source}`, out })),
    ],
    outdir: 'out',
    bundle: true,
    write: false,
    format: 'esm',
    target: ['chrome111'],
    logLevel: 'silent',
  });
  const assets = new Map(
    bundle.outputFiles.map((file) => [`/assets/${file.path.split('/').pop()}`, file.contents]),
  );
  const page =
    '<!doctype html><html><head><meta charset="utf-8"><title>Talk</title>' +
    '<link rel="icon" href="data:,"><script type="module" src="/assets/talk-page.js"></script></head>' +
    '<body><h1>Talk</h1></body></html>';

  const server: Server = createServer((request, response) => {
    const path = request.url?.split('?')[0] ?? '/';
    const asset = assets.get(path);
    if (path === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    else if (asset) response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(asset);
    else response.writeHead(404).end();
  });
  const sockets = new WebSocketServer({ noServer: true });
  const arrived: PeerSocket[] = [];
  const waiting: ((socket: PeerSocket) => void)[] = [];
  server.on('upgrade', (request, socket, head) => {
    const path = request.url ?? '';
    if (!path.startsWith('/web-call/')) return socket.destroy();
    sockets.handleUpgrade(request, socket, head, (ws) => {
      const peer = new PeerSocket(ws, path);
      const waiter = waiting.shift();
      if (waiter) waiter(peer);
      else arrived.push(peer);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/`,
    socketUrl: (callId) => `ws://127.0.0.1:${port}/web-call/${callId}`,
    nextSocket: () => {
      const peer = arrived.shift();
      if (peer) return Promise.resolve(peer);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: async () => {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
