/**
 * Stands in for the call runtime until the real one (src/voice/session*.ts) is wired into the
 * platform: a proven stream is attached, told the runtime is not available, and closed, so the call
 * goes on with what follows the stream in its instructions (or ends). Delete this file, and its
 * default in platform.ts, once `createPlatform` builds the real runtime.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { CallRuntime } from './transport.js';

export function noCallRuntime(log: Pick<FastifyBaseLogger, 'warn'>): CallRuntime {
  return {
    attach(connection) {
      log.warn({ callId: connection.callId }, 'media stream closed: runtime not available');
      connection.send.close();
      return { media() {}, mark() {}, dtmf() {}, ended() {} };
    },
  };
}
