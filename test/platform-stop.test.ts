/**
 * Stopping the platform while a client's request is still arriving: the request is answered, and the
 * stop does not then wait for the client's keep-alive connection to time out (Fastify keeps an idle
 * connection for 72 s; one that was busy when the close began used to be kept for all of it).
 */
import { connect, type Socket } from 'node:net';
import { expect, it } from 'vitest';
import { startTestPlatform } from './support/harness.js';

/** Resolves with everything the server sends until `predicate` holds for it. */
function readUntil(socket: Socket, predicate: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
      if (predicate(text)) resolve(text);
    });
    socket.on('error', reject);
  });
}

it('answers a request in flight, then stops without waiting out the keep-alive time-out', async () => {
  const t = await startTestPlatform({}, { listen: true, workers: false });
  const { port } = new URL(t.baseUrl as string);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const body = JSON.stringify({ email: 'nobody@example.test', password: 'not-the-password' });
  const half = Math.floor(body.length / 2);
  // Headers and half the body: the request has begun, so the connection is not idle.
  socket.write(
    `POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, half)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const answered = readUntil(socket, (text) => /\r\n\r\n/.test(text));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const started = Date.now();
  const stopped = t.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.write(body.slice(half));
  expect(await answered).toMatch(/^HTTP\/1\.1 (401|503) /);
  await stopped;
  await closed;
  // The keep-alive time-out is 72 s; the connection goes as soon as its answer is sent.
  expect(Date.now() - started).toBeLessThan(10_000);
}, 90_000);
