/**
 * `switchboard` (also `npm run cli --`): operator commands. Each opens the same database the server
 * would (taking the embedded lock, so it refuses to run beside a running embedded server).
 */
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type Config, ConfigError, loadConfig } from './config.js';
import { type Database, openDatabase } from './db/client.js';
import { acquireEmbeddedLock, EmbeddedLockError } from './db/embedded-lock.js';
import { isNumericOverflow } from './db/errors.js';
import { runMigrations } from './db/migrate.js';
import { BillingService } from './domains/billing/service.js';
import { IdentityChanges } from './domains/identity/principal-cache.js';
import { normalizeEmail } from './domains/identity/service.js';
import { findUserByEmail, markEmailVerified, setRole } from './domains/identity/store.js';
import { SmsComplianceService } from './domains/sms-compliance/service.js';
import { AppError } from './http/errors.js';
import { resolveSecretKey } from './lib/secret-key.js';
import { buildOpenApiDocument } from './openapi-document.js';

const USAGE = `Usage: switchboard <command>

Commands:
  migrate                                  Apply pending database migrations
  users verify EMAIL                       Mark a user's email address as verified
  users make-admin EMAIL [--organization ID]
                                           Give a user the admin role (in every organization they
                                           belong to, or only in organization ID)
  billing grant ORG_ID AMOUNT              Credit an organization's wallet (recorded in its ledger)
  compliance set PHONE_NUMBER_ID STATUS [REASON]
                                           Set a number's SMS compliance status: approved, pending,
                                           or rejected (REASON required, only with rejected)
  openapi                                  Print the OpenAPI document of the API
`;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export class UsageError extends Error {}

/** The largest wallet balance (numeric(14, 4)). */
const MAX_BALANCE = '9999999999.9999';

/** Throws `UsageError` unless `args` names a known command (checked before any database is opened). */
export function checkCommand(args: string[]): void {
  const [command, sub, email] = args;
  if (command === 'migrate' || command === 'openapi') return;
  if (command === 'users' && (sub === 'verify' || sub === 'make-admin')) {
    if (!email) throw new UsageError(`users ${sub} needs an EMAIL`);
    return;
  }
  if (command === 'billing' && sub === 'grant') {
    parseGrant(args);
    return;
  }
  if (command === 'compliance' && sub === 'set') {
    parseComplianceSet(args);
    return;
  }
  throw new UsageError(command ? `Unknown command: ${args.join(' ')}` : 'No command given');
}

function parseGrant(args: string[]): { organizationId: number; amount: number } {
  const [, , organization, amountText] = args;
  // Plain decimal digits only: Number() would also read "0x1f" or "3e1" as some other organization.
  const organizationId = /^[1-9]\d{0,9}$/.test(organization ?? '') ? Number(organization) : Number.NaN;
  if (!(organizationId <= 2_147_483_647)) throw new UsageError('billing grant needs a numeric ORG_ID');
  const amount = Number(amountText);
  if (!amountText || !/^\d{1,10}(\.\d{1,4})?$/.test(amountText) || amount <= 0) {
    throw new UsageError('billing grant needs a positive AMOUNT of at most 10 digits and 4 decimals');
  }
  return { organizationId, amount };
}

const COMPLIANCE_STATUSES = ['approved', 'pending', 'rejected'] as const;

function parseComplianceSet(args: string[]): {
  phoneNumberId: number;
  status: (typeof COMPLIANCE_STATUSES)[number];
  reason: string | undefined;
} {
  const [, , idText, status, ...words] = args;
  const phoneNumberId = /^[1-9]\d{0,9}$/.test(idText ?? '') ? Number(idText) : Number.NaN;
  if (!(phoneNumberId <= 2_147_483_647))
    throw new UsageError('compliance set needs a numeric PHONE_NUMBER_ID');
  const known = COMPLIANCE_STATUSES.find((s) => s === status);
  if (!known) throw new UsageError(`compliance set needs a STATUS: ${COMPLIANCE_STATUSES.join(', ')}`);
  // An unquoted reason arrives as several words.
  const reason = words.join(' ').trim() || undefined;
  if (known === 'rejected' && !reason) throw new UsageError('compliance set … rejected needs a REASON');
  if (known !== 'rejected' && reason) throw new UsageError('A REASON is only given with rejected');
  return { phoneNumberId, status: known, reason };
}

/** Runs one command against `database` (already open and migrated). Returns the exit code. */
export async function runCommand(args: string[], database: Database, io: CliIo): Promise<number> {
  checkCommand(args);
  const [command, sub, ...rest] = args;
  if (command === 'migrate') {
    const report = await runMigrations(database);
    io.out(`Applied ${report.applied} migration(s); ${report.total} in total.\n`);
    return 0;
  }
  if (command === 'users') {
    const email = rest[0] as string;
    const user = await findUserByEmail(database.db, normalizeEmail(email));
    if (!user) {
      io.err(`No user with email ${email}\n`);
      return 1;
    }
    if (sub === 'verify') {
      await markEmailVerified(database.db, user.id);
      io.out(`Verified ${user.email}\n`);
    } else {
      const flag = rest.indexOf('--organization');
      const organizationId = flag >= 0 ? Number(rest[flag + 1]) : undefined;
      if (organizationId !== undefined && !Number.isInteger(organizationId)) {
        throw new UsageError('--organization needs a numeric organization id');
      }
      const changed = await setRole(database.db, user.id, 'admin', organizationId);
      if (changed === 0) {
        io.err(
          `${user.email} is not a member of ${organizationId === undefined ? 'any organization' : `organization ${organizationId}`}\n`,
        );
        return 1;
      }
      io.out(`${user.email} is now admin in ${changed} organization(s)\n`);
    }
    // A running cluster (DATABASE_URL) drops its cached view of this user at once.
    await new IdentityChanges(database).userChanged(user.id);
    return 0;
  }
  if (command === 'billing') {
    const { organizationId, amount } = parseGrant(args);
    const billing = new BillingService({ db: database.db });
    if (!(await billing.organizationExists(organizationId))) {
      io.err(`No organization with id ${organizationId}\n`);
      return 1;
    }
    const entry = await billing
      .apply({ organizationId, amount, kind: 'grant', description: 'Granted by an operator' })
      .catch((error: unknown) => {
        if (isNumericOverflow(error)) return undefined;
        throw error;
      });
    if (!entry) {
      io.err(`The balance would exceed ${MAX_BALANCE}; nothing was granted\n`);
      return 1;
    }
    io.out(`Granted ${amount} to organization ${organizationId}; balance ${entry.balanceAfter}\n`);
    return 0;
  }
  if (command === 'compliance') {
    const { phoneNumberId, status, reason } = parseComplianceSet(args);
    const compliance = new SmsComplianceService({ db: database.db });
    try {
      const result = await compliance.setStatusAsOperator(phoneNumberId, { status, rejectionReason: reason });
      io.out(
        `SMS compliance of phone number ${phoneNumberId} (organization ${result.organizationId}) is now ${status}\n`,
      );
      return 0;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      io.err(`${error.detail}\n`);
      return 1;
    }
  }
  throw new UsageError(`${command} needs no database`);
}

/** Prints the OpenAPI document, built from the same route schemas as the server, on a throwaway database. */
async function printOpenApi(config: Config, io: CliIo): Promise<void> {
  io.out(`${JSON.stringify(await buildOpenApiDocument(config), null, 2)}\n`);
}

export async function main(
  argv: string[],
  io: CliIo = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
): Promise<number> {
  try {
    if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') {
      io.out(USAGE);
      return argv.length === 0 ? 1 : 0;
    }
    checkCommand(argv);
    const config = loadConfig();
    if (argv[0] === 'openapi') {
      await printOpenApi(config, io);
      return 0;
    }
    mkdirSync(config.dataDir, { recursive: true });
    const release = config.databaseUrl ? () => {} : acquireEmbeddedLock(config.dataDir);
    if (!config.databaseUrl) resolveSecretKey(config);
    const database = await openDatabase(
      config.databaseUrl
        ? { kind: 'server', url: config.databaseUrl, poolSize: 2 }
        : { kind: 'embedded', dataDir: config.dataDir },
    );
    try {
      if (argv[0] !== 'migrate') await runMigrations(database);
      return await runCommand(argv, database, io);
    } finally {
      await database.close();
      release();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof EmbeddedLockError) {
      io.err(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
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
