/**
 * A small HTTP load balancer for several platform processes on one database, as a cluster runs behind
 * one public address: requests go round-robin to the backends, and one whose backend refuses the
 * connection (a killed process) is tried on the next, so carriers' callbacks keep arriving while a
 * process is down. Bodies are read whole before forwarding (callbacks and API requests are small),
 * which is what lets a refused request be sent again.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';

export interface Balancer {
  url: string;
  /** Requests answered by each backend, by its URL. */
  answered: Map<string, number>;
  close(): Promise<void>;
}

export async function startBalancer(backends: string[]): Promise<Balancer> {
  const answered = new Map(backends.map((backend) => [backend, 0]));
  let next = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const first = next++ % backends.length;
      forward(incoming, Buffer.concat(chunks), outgoing, backends, first, 0, answered);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    answered,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function forward(
  incoming: IncomingMessage,
  body: Buffer,
  outgoing: ServerResponse,
  backends: string[],
  index: number,
  tried: number,
  answered: Map<string, number>,
): void {
  const backend = backends[index % backends.length] as string;
  const target = new URL(incoming.url ?? '/', backend);
  const upstream = request(
    target,
    { method: incoming.method, headers: { ...incoming.headers, 'content-length': String(body.length) } },
    (response) => {
      answered.set(backend, (answered.get(backend) ?? 0) + 1);
      // The backend's connection headers describe its connection, not the client's: its
      // `keep-alive: timeout=72` passed on made clients keep idle connections that this server closes
      // after its own 5 s, and a request sent at that moment failed with "other side closed".
      const { connection: _connection, 'keep-alive': _keepAlive, ...headers } = response.headers;
      outgoing.writeHead(response.statusCode ?? 502, headers);
      response.pipe(outgoing);
    },
  );
  upstream.on('error', (error: NodeJS.ErrnoException) => {
    // Refused: that process is not there; the next one gets the request. Anything else (a process
    // killed while answering) is the caller's to retry, as with a real balancer.
    if (error.code === 'ECONNREFUSED' && tried + 1 < backends.length) {
      forward(incoming, body, outgoing, backends, index + 1, tried + 1, answered);
      return;
    }
    if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
    outgoing.end(`upstream ${backend}: ${error.code ?? error.message}`);
  });
  upstream.end(body);
}
