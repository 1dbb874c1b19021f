/**
 * The work of the `switchboard` commands, loaded only when one runs: it brings in the whole platform
 * (domains, database drivers), which `--help` and `--version` have no use for.
 */
import type { Config } from '../config.js';
import { type Database, openDatabase } from '../db/client.js';
import { acquireEmbeddedLock } from '../db/embedded-lock.js';
import { isNumericOverflow } from '../db/errors.js';
import { runMigrations } from '../db/migrate.js';
import { BillingService } from '../domains/billing/service.js';
import { DomainError } from '../domains/errors.js';
import { findUserByEmail, markEmailVerified, setRole } from '../domains/identity/operator.js';
import { IdentityChanges } from '../domains/identity/principal-cache.js';
import { normalizeEmail } from '../domains/identity/service.js';
import { SmsComplianceService } from '../domains/sms-compliance/service.js';
import { resolveSecretKey } from '../lib/secret-key.js';
import { buildOpenApiDocument } from '../openapi-document.js';
import { type Command, UsageError } from './args.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/** The largest wallet balance (numeric(14, 4)). */
const MAX_BALANCE = '9999999999.9999';

/** Runs `command` on the configured database (opened, locked and migrated here). Returns the exit code. */
export async function execute(command: Command, config: Config, io: CliIo): Promise<number> {
  if (command.name === 'openapi') {
    await printOpenApi(config, io);
    return 0;
  }
  const release = config.databaseUrl ? () => {} : acquireEmbeddedLock(config.dataDir);
  if (!config.databaseUrl) resolveSecretKey(config);
  const database = await openDatabase(
    config.databaseUrl
      ? { kind: 'server', url: config.databaseUrl, poolSize: 2 }
      : { kind: 'embedded', dataDir: config.dataDir },
  );
  try {
    if (command.name !== 'migrate') await runMigrations(database);
    return await runOn(command, database, io);
  } finally {
    await database.close();
    release();
  }
}

/** Runs `command` against `database` (already open and migrated). Returns the exit code. */
export async function runOn(command: Command, database: Database, io: CliIo): Promise<number> {
  switch (command.name) {
    case 'migrate': {
      const report = await runMigrations(database);
      io.out(`Applied ${report.applied} migration(s); ${report.total} in total.\n`);
      return 0;
    }
    case 'users verify':
    case 'users make-admin': {
      const user = await findUserByEmail(database.db, normalizeEmail(command.email));
      if (!user) {
        io.err(`No user with email ${command.email}\n`);
        return 1;
      }
      if (command.name === 'users verify') {
        await markEmailVerified(database.db, user.id);
        io.out(`Verified ${user.email}\n`);
      } else {
        const { organizationId } = command;
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
    case 'billing grant': {
      const { organizationId, amount } = command;
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
    case 'compliance set': {
      const { phoneNumberId, status, reason } = command;
      const compliance = new SmsComplianceService({ db: database.db });
      try {
        const result = await compliance.setStatusAsOperator(phoneNumberId, {
          status,
          rejectionReason: reason,
        });
        io.out(
          `SMS compliance of phone number ${phoneNumberId} (organization ${result.organizationId}) is now ${status}\n`,
        );
        return 0;
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        io.err(`${error.detail}\n`);
        return 1;
      }
    }
    case 'openapi':
      throw new UsageError('openapi needs no database');
  }
}

/** Prints the OpenAPI document, built from the same route schemas as the server (src/openapi-document.ts). */
async function printOpenApi(config: Config, io: CliIo): Promise<void> {
  io.out(`${JSON.stringify(await buildOpenApiDocument(config), null, 2)}\n`);
}
