/**
 * `npm start`: configuration → database (embedded or server) → migrations → job queue → HTTP listen
 * → workers. SIGTERM/SIGINT stop it cleanly: no new requests, running jobs drained, then the
 * database closes.
 */
import { mkdirSync } from 'node:fs';
import { pino } from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/client.js';
import { acquireEmbeddedLock, EmbeddedLockError } from './db/embedded-lock.js';
import { runMigrations } from './db/migrate.js';
import { loggerOptions } from './http/logging.js';
import { resolveSecretKey } from './lib/secret-key.js';
import { createPlatform } from './platform.js';
import { VERSION } from './version.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino(loggerOptions(config.logLevel) as object);
  mkdirSync(config.dataDir, { recursive: true });
  const releaseLock = config.databaseUrl ? () => {} : acquireEmbeddedLock(config.dataDir);

  const { secretKey, generatedAt } = resolveSecretKey(config);
  if (generatedAt)
    logger.warn({ file: generatedAt }, 'SECRET_KEY not set: generated one; keep this file safe');

  const database = await openDatabase(
    config.databaseUrl
      ? { kind: 'server', url: config.databaseUrl, poolSize: config.databasePoolSize }
      : { kind: 'embedded', dataDir: config.dataDir },
  );
  const migrations = await runMigrations(database);
  logger.info({ ...migrations, database: database.kind }, 'database ready');

  const platform = await createPlatform({ config, secretKey, database, logger });
  // Handled from here on, so a signal during the rest of the start-up (the console's build takes a
  // moment) stops the platform cleanly too instead of killing the process mid-work.
  let signals = 0;
  const stop = async (signal: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    logger.info({ signal }, 'stopping: draining requests and jobs');
    try {
      await platform.stop();
      releaseLock();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'unclean stop');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  await platform.app.listen({ host: config.host, port: config.port });
  if (config.workersEnabled) await platform.startWorkers();
  // A SIP port taken by another program must not keep the platform from serving everything else:
  // trunk calls are then refused with the reason, and the log says what to change.
  const sip = config.sip.enabled
    ? await platform.startSip().catch((error: unknown) => {
        logger.error(
          { err: error, sip: `${config.sip.host}:${config.sip.port}` },
          'the SIP agent could not start: SIP trunk calls are unavailable (set SIP_PORT, or SIP_ENABLED=false)',
        );
        return undefined;
      })
    : undefined;
  // The console is built now rather than on the first visit, so a broken build shows here; the API
  // serves on without it.
  const consoleUrl = await platform.consoleBuilds.get().then(
    (bundle) => {
      logger.info({ build_ms: bundle.buildMs }, 'web console built');
      return `${config.publicUrl}/console/`;
    },
    (error: unknown) => {
      logger.error({ err: error }, 'the web console could not be built: the API serves without it');
      return 'unavailable';
    },
  );
  logger.info(
    {
      version: VERSION,
      public_url: config.publicUrl,
      console: consoleUrl,
      workers: config.workersEnabled,
      sip: sip ? `${config.sip.host}:${sip.address.port}` : 'off',
    },
    'Switchboard is running',
  );

  process.on('unhandledRejection', (error) => logger.error({ err: error }, 'unhandled rejection'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof EmbeddedLockError) {
    console.error(error.message);
  } else {
    console.error('Switchboard failed to start:', error);
  }
  process.exit(1);
});
