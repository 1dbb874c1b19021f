/**
 * Wallet charges under concurrency: `BillingService.apply` (balance change + ledger entry in one
 * statement) beside a bare `UPDATE wallets SET balance = balance + x` (no ledger) in the same run.
 * Checks the invariant after each: the balance equals the sum of the ledger.
 */
import { markEmailVerified } from '../src/domains/identity/store.js';
import { startBenchPlatform, table, timed } from './support.js';

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 2000);
  const concurrency = Number(args[1] ?? 20);
  const bench = await startBenchPlatform();
  const { app, database, services } = bench.platform;
  const registered = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/register',
    payload: {
      email: 'billing@example.test',
      password: 'benchmark password',
      first_name: 'B',
      last_name: 'L',
    },
  });
  const organizationId: number = registered.json().organization.id;
  await markEmailVerified(database.db, registered.json().user.id);

  const raw = await timed(total, concurrency, () =>
    database.executeSql('update wallets set balance = balance + $1 where organization_id = $2', [
      -0.0001,
      organizationId,
    ]),
  );
  // Put the wallet back in line with its ledger before measuring the real path.
  await database.executeSql(
    'update wallets set balance = (select coalesce(sum(amount), 0) from ledger_entries where organization_id = $1) where organization_id = $1',
    [organizationId],
  );
  const applied = await timed(total, concurrency, (i) =>
    services.billing.apply({
      organizationId,
      amount: -0.0123,
      kind: 'call',
      description: 'bench',
      reference: `call:${i}`,
    }),
  );

  const { rows } = await database.executeSql(
    `select w.balance::float8 as balance,
            (select sum(amount)::float8 from ledger_entries where organization_id = $1) as ledger_sum,
            (select count(*)::int from ledger_entries where organization_id = $1) as entries
       from wallets w where w.organization_id = $1`,
    [organizationId],
  );
  const check = rows[0] as { balance: number; ledger_sum: number; entries: number };
  const consistent = Math.abs(check.balance - check.ledger_sum) < 1e-9 && check.entries === total + 1;

  table([
    { path: 'bare UPDATE of the balance (baseline, no ledger)', 'ops/s': Math.round(raw), ratio: 1 },
    {
      path: 'BillingService.apply (balance + ledger entry, one statement)',
      'ops/s': Math.round(applied),
      ratio: Number((applied / raw).toFixed(2)),
    },
  ]);
  console.log(
    `billing: ${Math.round(applied)} charges/s with ledger vs ${Math.round(raw)} bare balance updates/s — ratio ${(applied / raw).toFixed(2)}; ` +
      `${total} concurrent charges (${concurrency} at a time): balance ${check.balance.toFixed(4)} ${consistent ? '=' : '≠'} ledger sum ${check.ledger_sum.toFixed(4)} over ${check.entries} entries`,
  );
  await bench.close();
  if (!consistent) process.exitCode = 1;
}
