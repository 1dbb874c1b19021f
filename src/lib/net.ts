/** Network helpers. */
import { createServer } from 'node:net';

/** A free loopback port: taken by a throwaway server, then released for the caller to listen on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}
