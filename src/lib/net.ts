/** Network helpers. */
import type { Server as HttpServer } from 'node:http';
import { createServer, isIPv6, type Server } from 'node:net';

/** A free loopback port: taken by a throwaway server, then released for the caller to listen on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

/**
 * Listens on loopback and resolves to the port taken (the one asked for, or the system's for 0). A
 * port that cannot be taken rejects here — the simulators' runner names it — instead of surfacing
 * as an unhandled 'error' event.
 */
export async function listenOnLoopback(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

/** Closes a simulator's server, cutting its open connections first; nothing when it never started. */
export async function closeServer(server: HttpServer | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * The part of a client address that identifies one client for per-address limits: an IPv4 address
 * as is (also when written IPv4-mapped, `::ffff:192.0.2.1`), an IPv6 address by its /64 network,
 * since one subscriber usually holds a whole /64 and could otherwise take a new address per try.
 */
export function clientNetwork(address: string): string {
  const plain = address.split('%')[0]!.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(plain);
  if (mapped) return mapped[1]!;
  if (!isIPv6(plain)) return plain;
  const [head = '', tail] = plain.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = Array.from({ length: Math.max(0, 8 - headGroups.length - tailGroups.length) }, () => '0');
  const groups = tail === undefined ? headGroups : [...headGroups, ...zeros, ...tailGroups];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
