/**
 * Assistant reads and writes through the service — a query plus opening and masking every sealed
 * secret, or validation plus sealing — beside a raw SQL read of the same row in the same run.
 */
import { Tenant } from '../src/db/tenant.js';
import type { Principal } from '../src/domains/identity/principal.js';
import { startBenchPlatform, table } from './support.js';

async function rate(total: number, op: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await op(i); // warm-up
  const started = performance.now();
  for (let i = 0; i < total; i++) await op(i);
  return total / ((performance.now() - started) / 1000);
}

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 2000);
  const bench = await startBenchPlatform();
  const { app, database, services } = bench.platform;
  const registered = (
    await app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: {
        email: 'assistants@example.test',
        password: 'benchmark password',
        first_name: 'A',
        last_name: 'S',
      },
    })
  ).json();
  const principal: Principal = {
    via: 'jwt',
    user: {
      id: registered.user.id,
      email: registered.user.email,
      firstName: 'A',
      lastName: 'S',
      verified: true,
    },
    organization: { id: registered.organization.id },
    role: 'admin',
    tenant: new Tenant(registered.organization.id),
    sessionId: null,
    apiKey: null,
  };
  const body = (name: string) => ({
    name,
    llm_provider_config: { api_key: 'sk-bench-0000000000000001', model: 'm' },
    llm_fallback_providers: {
      enabled: true,
      fallbacks: [{ provider: 'llm_b', api_key: 'fb-bench-0000000000000002' }],
    },
    carrier_a_config: { account_sid: 'AC1', auth_token: 'tok-bench-000000000003' },
    stt_settings: { api_key: 'stt-bench-000000000004' },
    tts_settings: { api_key: 'tts-bench-000000000005' },
    tools_settings: { transfer_call: { enabled: true, transfer_numbers: ['+14155552671'] } },
  });
  const created = await services.assistants.create(principal, body('bench'));
  const id = created.row.id;

  const raw = await rate(total, () => database.executeSql('select * from assistants where id = $1', [id]));
  const get = await rate(total, () => services.assistants.get(principal, id));
  let made = 0;
  const create = await rate(Math.min(total, 500), () =>
    services.assistants.create(principal, body(`bench-${made++}`)),
  );

  // A number routed to the assistant, organization keys and a fallback key: what a call resolves.
  await services.organizations.update(principal, {
    apiKeys: { stt_a: { api_key: 'org-stt-bench-0000006' } },
    carriers: { carrier_b: { api_key: 'org-carrier-b-000007', connection_id: 'conn-1' } },
  });
  await services.fallbackKeys.create(principal, 'tts_a', {
    name: 'spare',
    apiKey: 'fallback-tts-bench-0008',
    enabled: true,
    concurrentLimit: null,
  });
  await services.phoneNumbers.create(principal, {
    phone_number: '+14155550100',
    provider: 'carrier_a',
    assistant_id: id,
  });
  const resolve = await rate(total, () =>
    services.configResolver.resolve(principal.tenant, { assistantId: id }),
  );
  let numbered = 0;
  const createNumber = await rate(Math.min(total, 500), () =>
    services.phoneNumbers.create(principal, {
      phone_number: `+1415556${String(numbered++).padStart(4, '0')}`,
      provider: 'carrier_b',
      assistant_id: id,
    }),
  );

  table([
    { operation: 'raw SQL select of the row (baseline)', 'ops/s': Math.round(raw), ratio: 1 },
    {
      operation: 'resolve a call configuration (5 queries, open 9 secrets)',
      'ops/s': Math.round(resolve),
      ratio: Number((resolve / raw).toFixed(2)),
    },
    {
      operation: 'PhoneNumberService.create (E.164, assistant check, insert, read back)',
      'ops/s': Math.round(createNumber),
      ratio: Number((createNumber / raw).toFixed(2)),
    },
    {
      operation: 'AssistantService.get (query + open and mask 5 secrets)',
      'ops/s': Math.round(get),
      ratio: Number((get / raw).toFixed(2)),
    },
    {
      operation: 'AssistantService.create (validate, seal 5 secrets, insert)',
      'ops/s': Math.round(create),
      ratio: Number((create / raw).toFixed(2)),
    },
  ]);
  console.log(
    `assistants: get ${Math.round(get)}/s vs raw select ${Math.round(raw)}/s — ratio ${(get / raw).toFixed(2)}; create ${Math.round(create)}/s; resolve ${Math.round(resolve)}/s (ratio ${(resolve / raw).toFixed(2)})`,
  );
  await bench.close();
}
