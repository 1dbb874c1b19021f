/**
 * What `createPlatform` (platform.ts) is given and what it hands back: the assembled platform that
 * `npm start`, the tests, the benchmarks and the demo drive — its app, database, queue, services, and
 * the processes around them (workers, SIP agent) with their stop.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import type { ConsoleBuilds } from './console/build.js';
import type { Database } from './db/client.js';
import type { ApiKeyUsage } from './domains/api-keys/usage.js';
import type { IdentityAuthenticator } from './domains/identity/authenticator.js';
import type { App } from './http/types.js';
import type { Mailer } from './lib/mail.js';
import type { MediaTokens } from './lib/media-token.js';
import type { HostLookup } from './lib/outbound-target.js';
import type { SecretBox } from './lib/secrets.js';
import type { JobQueue } from './queue/queue.js';
import type { Services } from './services.js';
import type { VoiceMetrics } from './voice/metrics.js';
import type { SipAgent } from './voice/sip/agent.js';
import type { CallRuntime } from './voice/transport.js';

export interface PlatformOptions {
  config: Config;
  secretKey: string;
  /** Opened and migrated by the caller. */
  database: Database;
  logger: FastifyBaseLogger;
  /** Seconds between a worker's polls (it is also woken at once by local enqueues). */
  queuePollingIntervalSeconds?: number;
  /** How tenants' URL hosts are resolved for the outbound-target policy (default: the system's). */
  hostLookup?: HostLookup;
  /** Where proven media streams of live calls go (default: the voice runtime, src/voice/). */
  callRuntime?: CallRuntime;
}

export interface Platform {
  app: App;
  config: Config;
  database: Database;
  queue: JobQueue;
  mailer: Mailer;
  secrets: SecretBox;
  /** Signs the media-stream URLs given to carriers, and verifies them when a stream connects. */
  mediaTokens: MediaTokens;
  metrics: Registry;
  /** The live call runtime's figures (turn latencies, barge-in, active calls…), served on /metrics. */
  voiceMetrics: VoiceMetrics;
  services: Services;
  apiKeyUsage: ApiKeyUsage;
  authenticator: IdentityAuthenticator;
  /** The web console's build, made when first asked for (`npm start` asks once it listens). */
  consoleBuilds: ConsoleBuilds;
  startWorkers(): Promise<void>;
  /** Starts the SIP agent for organizations' own trunks (`npm start` does when SIP_ENABLED). */
  startSip(): Promise<SipAgent>;
  /** Stops taking requests, drains running jobs, flushes counters, then closes the database. */
  stop(): Promise<void>;
}
