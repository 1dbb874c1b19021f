/**
 * `switchboard` (also `npm run cli --`): operator commands. Each opens the same database the server
 * would (taking the embedded lock, so it refuses to run beside a running embedded server). The
 * command line is read first (cli/args.ts) and the work, with the whole platform, is loaded only
 * when a command runs (cli/commands.ts): help and the version answer at once and open nothing.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Invocation, parseArgs, UsageError, usageOf } from './cli/args.js';
import type { CliIo } from './cli/commands.js';
import { ConfigError, loadConfig } from './config.js';
import type { Database } from './db/client.js';
import { EmbeddedLockError } from './db/embedded-lock.js';
import { VERSION } from './version.js';

export type { CliIo };
export { UsageError };

/** Runs one command line against `database` (already open and migrated). Returns the exit code. */
export async function runCommand(args: readonly string[], database: Database, io: CliIo): Promise<number> {
  const invocation = parseArgs(args);
  if (invocation.kind !== 'command') throw new UsageError(`${args.join(' ')} is no database command`);
  const { runOn } = await import('./cli/commands.js');
  return runOn(invocation.command, database, io);
}

/**
 * Whether DATA_DIR holds an embedded database (`pgdata` is where db/client.ts opens it; PG_VERSION is
 * the first file PostgreSQL's initdb writes there). Opening a missing one would create an empty
 * database, silently, wherever a mistyped DATA_DIR points.
 */
function embeddedDatabaseExists(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'));
}

function noDatabase(dataDir: string): string {
  return [
    `No Switchboard database in ${dataDir} (DATA_DIR); nothing was created.`,
    'Set DATA_DIR to the directory the server uses, or create the database there: `npm start` creates',
    'it on its first start, `switchboard migrate` without starting the server.',
    '',
  ].join('\n');
}

const STDIO: CliIo = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

export async function main(argv: string[], io: CliIo = STDIO): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`${error.message}\n\n${usageOf(error.topic)}`);
    return 2;
  }
  if (invocation.kind === 'help') {
    io.out(invocation.text);
    return 0;
  }
  if (invocation.kind === 'version') {
    io.out(`${VERSION}\n`);
    return 0;
  }
  const { command } = invocation;
  try {
    const config = loadConfig();
    if (!config.databaseUrl && command.name !== 'openapi') {
      // `migrate` is the one command that may create the embedded database.
      if (command.name === 'migrate') mkdirSync(config.dataDir, { recursive: true });
      else if (!embeddedDatabaseExists(config.dataDir)) {
        io.err(noDatabase(config.dataDir));
        return 1;
      }
    }
    const { execute } = await import('./cli/commands.js');
    return await execute(command, config, io);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof EmbeddedLockError) {
      io.err(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

/**
 * A reader that stops early (`switchboard openapi | head -1`) closes the pipe: that is the reader's
 * choice, not our failure, so EPIPE on stdout ends the process quietly with 0 instead of an
 * unhandled 'error' event and its stack trace. The output was all that was left to do: commands
 * write it after their work is committed, and exit handlers (the embedded lock) still run.
 */
export function exitQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  exitQuietlyWhenStdoutCloses();
  // exitCode, not exit(): exit() would cut off output still queued for a pipe (the OpenAPI document).
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
