/**
 * The outbound-target policy (src/lib/outbound-target.ts) over every tenant URL that the platform or
 * a carrier fetches: each URL field × each form of a refused address, with ALLOW_PRIVATE_TARGETS true
 * and false. Link-local and cloud metadata addresses are refused always, in any spelling (integer,
 * hex and octal hosts, IPv4-mapped and other IPv6 forms, names resolving to them); loopback and
 * private ones only when the setting is false. Names resolve through an injected lookup, so no test
 * needs the network; `localhost` goes to the system's resolver (/etc/hosts). Workers do not run:
 * nothing accepted here is ever fetched, except by the delivery tests, which call the worker
 * themselves against a receiver on 127.0.0.1.
 */
import { lookup as systemLookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import * as deliveries from '../src/domains/webhooks/store.js';
import { addressTier, type HostLookup, OutboundTargets } from '../src/lib/outbound-target.js';
import { expectValidation } from './support/assertions.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

/** What the injected resolver answers; other names do not resolve, `localhost` asks the system. */
const NAMES: Record<string, string[]> = {
  'metadata.attacker.test': ['169.254.169.254'],
  'mixed.attacker.test': ['93.184.216.34', '169.254.169.254'],
  'v6-metadata.attacker.test': ['fd00:ec2::254'],
  'mapped-metadata.attacker.test': ['::ffff:169.254.169.254'],
  'intranet.attacker.test': ['10.0.0.5'],
  'loopback.attacker.test': ['127.0.0.1'],
  'public.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
};

/** A resolver over NAMES; `rebind.attacker.test` answers loopback once, then the metadata address. */
function testLookup(): HostLookup {
  let rebinds = 0;
  return async (host) => {
    if (host === 'localhost') return systemLookup(host, { all: true, verbatim: true });
    const answer =
      host === 'rebind.attacker.test' ? [rebinds++ === 0 ? '127.0.0.1' : '169.254.169.254'] : NAMES[host];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer.map((address) => ({ address, family: isIP(address) }));
  };
}

/** Refused whatever ALLOW_PRIVATE_TARGETS says. */
const NEVER: Array<[string, string]> = [
  ['link-local IPv4 (cloud metadata)', 'http://169.254.169.254/latest/meta-data/'],
  ['link-local IPv4 (task credentials)', 'http://169.254.170.2/v2/credentials'],
  ['decimal integer host', 'http://2852039166/latest/meta-data/'],
  ['hexadecimal integer host', 'http://0xa9fea9fe/'],
  ['hexadecimal dotted host', 'http://0xa9.254.169.254/'],
  ['octal dotted host', 'http://0251.0376.0251.0376/'],
  ['two-part host', 'http://169.254.43518/'],
  ['IPv4-mapped IPv6', 'http://[::ffff:169.254.169.254]/'],
  ['IPv4-mapped IPv6 in hex', 'http://[::ffff:a9fe:a9fe]/'],
  ['IPv4-compatible IPv6', 'http://[::169.254.169.254]/'],
  ['NAT64 IPv6', 'http://[64:ff9b::a9fe:a9fe]/'],
  ['link-local IPv6', 'http://[fe80::1]:8080/'],
  ['AWS metadata over IPv6', 'http://[fd00:ec2::254]/latest/meta-data/'],
  ['Alibaba Cloud metadata', 'http://100.100.100.200/latest/meta-data/'],
  ['unspecified IPv4', 'http://0.0.0.0:8080/'],
  ['unspecified IPv4, short', 'http://0/'],
  ['unspecified IPv6', 'http://[::]/'],
  ['a name resolving to link-local', 'http://metadata.attacker.test/latest/meta-data/'],
  ['a name resolving to a public and a link-local address', 'https://mixed.attacker.test/hook'],
  ['a name resolving to AWS IPv6 metadata', 'http://v6-metadata.attacker.test/'],
  ['a name resolving to mapped link-local', 'http://mapped-metadata.attacker.test/'],
];

/** Refused unless ALLOW_PRIVATE_TARGETS. */
const PRIVATE: Array<[string, string]> = [
  ['loopback', 'http://127.0.0.1:8080/hook'],
  ['loopback, hexadecimal', 'http://0x7f.1/hook'],
  ['localhost (system resolver)', 'http://localhost:8080/hook'],
  ['a name under localhost', 'http://app.localhost/hook'],
  ['IPv6 loopback', 'http://[::1]:8080/hook'],
  ['RFC 1918 10/8', 'http://10.0.0.5/v1'],
  ['RFC 1918 172.16/12', 'http://172.16.0.1/v1'],
  ['RFC 1918 192.168/16', 'http://192.168.1.10/v1'],
  ['carrier-grade NAT', 'http://100.64.0.1/v1'],
  ['unique local IPv6', 'http://[fd12:3456::1]/v1'],
  ['IPv4-mapped private', 'http://[::ffff:10.0.0.5]/v1'],
  ['a name resolving to a private address', 'http://intranet.attacker.test/v1'],
];

/** Accepted always (a name that does not resolve yet is judged when it is fetched). */
const PUBLIC: Array<[string, string]> = [
  ['a public address', 'https://93.184.216.34/hook'],
  ['a name resolving to public addresses', 'https://public.example.com/hook'],
  ['a name that does not resolve', 'https://nowhere.attacker.test/hook'],
];

interface Context {
  t: TestPlatform;
  org: CarrierOrganization;
  presetId: number;
}

interface UrlField {
  name: string;
  loc: Array<string | number>;
  /** The status of an accepted request. */
  accepted: number;
  submit(context: Context, url: string): Promise<LightMyRequestResponse>;
}

let serial = 0;
const unique = (label: string) => `${label} ${++serial}`;

const inject = ({ t, org }: Context, method: 'POST' | 'PUT', url: string, payload: Record<string, unknown>) =>
  t.app.inject({ method, url, headers: org.admin.headers, payload });

/** Every tenant URL the platform or a carrier fetches, where a tenant gives it. */
const FIELDS: UrlField[] = [
  {
    name: 'assistant webhook_url (create)',
    loc: ['body', 'webhook_url'],
    accepted: 201,
    submit: (c, url) => inject(c, 'POST', '/api/v1/assistants', { name: unique('hooks'), webhook_url: url }),
  },
  {
    name: 'assistant webhook_url (update)',
    loc: ['body', 'webhook_url'],
    accepted: 200,
    submit: (c, url) => inject(c, 'PUT', `/api/v1/assistants/${c.org.assistantId}`, { webhook_url: url }),
  },
  {
    name: 'assistant sms_webhook_url',
    loc: ['body', 'sms_webhook_url'],
    accepted: 201,
    submit: (c, url) =>
      inject(c, 'POST', '/api/v1/assistants', { name: unique('sms'), sms_webhook_url: url }),
  },
  {
    name: 'assistant llm_provider_config.base_url',
    loc: ['body', 'llm_provider_config', 'base_url'],
    accepted: 201,
    submit: (c, url) =>
      inject(c, 'POST', '/api/v1/assistants', {
        name: unique('llm'),
        llm_provider: 'custom',
        llm_provider_config: { api_key: 'sk-test-key', base_url: url },
      }),
  },
  {
    name: 'assistant custom_llm_url',
    loc: ['body', 'custom_llm_url'],
    accepted: 200,
    submit: (c, url) =>
      inject(c, 'PUT', `/api/v1/assistants/${c.org.assistantId}`, {
        llm_provider: 'custom',
        custom_llm_url: url,
      }),
  },
  {
    name: 'assistant llm_fallback_providers base_url',
    loc: ['body', 'llm_fallback_providers', 'fallbacks', 1, 'base_url'],
    accepted: 200,
    submit: (c, url) =>
      inject(c, 'PUT', `/api/v1/assistants/${c.org.assistantId}`, {
        llm_fallback_providers: {
          enabled: true,
          fallbacks: [
            { provider: 'custom', api_key: 'sk-first', base_url: 'https://public.example.com/v1' },
            { provider: 'custom', api_key: 'sk-second', base_url: url },
          ],
        },
      }),
  },
  {
    name: 'assistant custom tool http.url',
    loc: ['body', 'tools_settings', 'custom_tools', 0, 'http', 'url'],
    accepted: 200,
    submit: (c, url) =>
      inject(c, 'PUT', `/api/v1/assistants/${c.org.assistantId}`, {
        tools_settings: {
          custom_tools: [{ name: 'lookup', description: 'Looks up', type: 'http', http: { url } }],
        },
      }),
  },
  {
    name: 'LLM preset base_url (create)',
    loc: ['body', 'base_url'],
    accepted: 201,
    submit: (c, url) =>
      inject(c, 'POST', '/api/v1/organization/llm-presets', {
        name: unique('preset'),
        provider: 'custom',
        model: 'local-model',
        base_url: url,
      }),
  },
  {
    name: 'LLM preset base_url (update)',
    loc: ['body', 'base_url'],
    accepted: 200,
    submit: (c, url) => inject(c, 'PUT', `/api/v1/organization/llm-presets/${c.presetId}`, { base_url: url }),
  },
  {
    name: 'webhook test event url',
    loc: ['body', 'url'],
    accepted: 200,
    submit: (c, url) => inject(c, 'POST', '/api/v1/organization/webhook-deliveries/test', { url }),
  },
  {
    name: 'SMS media_urls (fetched by the carrier)',
    loc: ['body', 'media_urls', 1],
    accepted: 200,
    submit: (c, url) =>
      inject(c, 'POST', '/sms/send', {
        from_phone_number: c.org.number,
        to_phone_number: '+14155550123',
        message: 'Your label',
        media_urls: ['https://public.example.com/label.png', url],
      }),
  },
];

function expectRefused(response: LightMyRequestResponse, field: UrlField, label: string): void {
  expect(response.statusCode, `${field.name}: ${label}: ${response.body}`).toBe(422);
  expectValidation(response, field.loc);
  const issue = (response.json().detail as Array<{ loc: unknown[]; msg: string }>).find(
    (d) => JSON.stringify(d.loc) === JSON.stringify(field.loc),
  );
  expect(issue?.msg, label).toMatch(/^Refused: /);
}

class Receiver {
  readonly paths: string[] = [];
  port = 0;
  #server: Server | undefined;

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      this.paths.push(request.url ?? '/');
      request.resume();
      request.on('end', () => response.writeHead(204).end());
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }
}

let receiver: Receiver;
beforeAll(async () => {
  receiver = new Receiver();
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

describe.each([true, false])('with ALLOW_PRIVATE_TARGETS=%s', (allowPrivate) => {
  const context = {} as Context;
  beforeAll(async () => {
    context.t = await startTestPlatform(
      { ALLOW_PRIVATE_TARGETS: String(allowPrivate) },
      { workers: false, hostLookup: testLookup() },
    );
    context.org = await new Factories(context.t).carrierOrganization();
    const preset = await inject(context, 'POST', '/api/v1/organization/llm-presets', {
      name: 'base',
      provider: 'custom',
      model: 'local-model',
      base_url: 'https://public.example.com/v1',
    });
    expect(preset.statusCode, preset.body).toBe(201);
    context.presetId = preset.json().id;
  });
  afterAll(async () => {
    await context.t.close();
  });

  describe.each(FIELDS.map((field) => [field.name, field] as const))('%s', (_name, field) => {
    it('refuses link-local and metadata addresses in every form', async () => {
      for (const [label, url] of NEVER) expectRefused(await field.submit(context, url), field, label);
    });

    it(`${allowPrivate ? 'accepts' : 'refuses'} loopback and private addresses`, async () => {
      for (const [label, url] of PRIVATE) {
        const response = await field.submit(context, url);
        if (allowPrivate) expect(response.statusCode, `${label}: ${response.body}`).toBe(field.accepted);
        else expectRefused(response, field, label);
      }
    });

    it('accepts public addresses, and names that do not resolve yet', async () => {
      for (const [label, url] of PUBLIC) {
        const response = await field.submit(context, url);
        expect(response.statusCode, `${label}: ${response.body}`).toBe(field.accepted);
      }
    });
  });

  it('hands the carrier the media URL as it was checked', async () => {
    const sms = FIELDS.find((field) => field.loc.includes('media_urls'))!;
    const response = await sms.submit(context, 'https://PUBLIC.example.com:443/media/../label.png');
    expect(response.statusCode, response.body).toBe(200);
    const message = await context.t.app.inject({
      method: 'GET',
      url: `/sms/${response.json().message_id}`,
      headers: context.org.admin.headers,
    });
    expect(message.json().media_urls).toEqual([
      'https://public.example.com/label.png',
      'https://public.example.com/label.png',
    ]);
  });

  describe('webhook delivery (a stored URL is judged again at every attempt)', () => {
    /** Emits an event to `url` as a call or SMS event is emitted, and runs one attempt of its job. */
    async function deliverTo(url: string) {
      const { webhooks } = context.t.platform.services;
      const row = await webhooks.send(new Tenant(context.org.admin.organizationId), {
        url,
        type: 'call.completed',
        data: {},
      });
      await webhooks.deliver({ delivery_id: row.id }, { retryCount: 0 }).catch(() => undefined);
      return deliveries.findDeliveryForWorker(context.t.database.db, row.id);
    }

    it('refuses refused targets before any request', async () => {
      const refused = allowPrivate ? NEVER : [...NEVER, ...PRIVATE];
      for (const [label, url] of refused) {
        const row = await deliverTo(url);
        expect(row, label).toMatchObject({ status: 'failed', attempts: 0, lastStatusCode: null });
        expect(row?.lastError, label).toMatch(/^Refused: /);
      }
    });

    it(`${allowPrivate ? 'delivers to' : 'refuses'} loopback, connecting to the address it checked`, async () => {
      const port = receiver.port;
      // rebind.attacker.test answers 127.0.0.1 to the check and the metadata address after it: the
      // request goes where the check looked (the system resolver would not know the name at all).
      const forms = [
        `http://127.0.0.1:${port}/literal`,
        `http://0x7f.1:${port}/hex`,
        `http://rebind.attacker.test:${port}/rebind`,
      ];
      for (const url of forms) {
        const row = await deliverTo(url);
        if (allowPrivate) expect(row, url).toMatchObject({ status: 'delivered', attempts: 1 });
        else expect(row, url).toMatchObject({ status: 'failed', attempts: 0 });
      }
      const reached = receiver.paths.filter((path) => ['/literal', '/hex', '/rebind'].includes(path));
      expect(reached).toHaveLength(allowPrivate ? 3 : 0);
      receiver.paths.length = 0;
    });
  });
});

describe('the policy', () => {
  it('tells the tiers apart', () => {
    const tiers: Record<string, string[]> = {
      never: [
        '169.254.169.254',
        '169.254.0.1',
        '0.0.0.0',
        '0.1.2.3',
        '100.100.100.200',
        '224.0.0.1',
        '255.255.255.255',
        '::',
        'fe80::1',
        'fe80::1%eth0',
        'febf::1',
        'fd00:ec2::254',
        'ff02::1',
        '::ffff:169.254.169.254',
        '::a9fe:a9fe',
        '64:ff9b::a9fe:a9fe',
        '2002:a9fe:a9fe::1',
      ],
      private: [
        '127.0.0.1',
        '10.0.0.1',
        '172.16.5.4',
        '192.168.1.1',
        '100.64.0.1',
        '100.127.255.254',
        '198.18.0.1',
        '::1',
        'fd00::1',
        'fd00:ec2::253',
        'fc00::1',
        '::ffff:10.0.0.1',
        '::ffff:127.0.0.1',
      ],
      public: [
        '8.8.8.8',
        '1.1.1.1',
        '172.32.0.1',
        '100.128.0.1',
        '169.253.255.255',
        '2606:4700:4700::1111',
        '::ffff:8.8.8.8',
        '64:ff9b::808:808',
      ],
    };
    for (const [tier, addresses] of Object.entries(tiers)) {
      for (const address of addresses) expect(addressTier(address), address).toBe(tier);
    }
  });

  it('resolves a name once, judges every address, and gives the first to connect to', async () => {
    const lookup = testLookup();
    const strict = new OutboundTargets({ allowPrivate: false, lookup });
    expect(await strict.check('https://public.example.com/x')).toEqual({
      ok: true,
      target: { address: '93.184.216.34', family: 4 },
    });
    expect(await strict.check('https://mixed.attacker.test/x')).toMatchObject({
      ok: false,
      refused: true,
      reason: expect.stringMatching(/mixed\.attacker\.test resolves to 169\.254\.169\.254.*metadata/),
    });
    expect(await strict.check('https://nowhere.attacker.test/x')).toMatchObject({
      ok: false,
      refused: false,
      reason: expect.stringMatching(/Could not resolve nowhere\.attacker\.test: ENOTFOUND/),
    });
    expect(await strict.check('ftp://public.example.com/x')).toMatchObject({ ok: false, refused: true });
  });

  it('counts a lookup that does not answer in time as unresolved', async () => {
    const targets = new OutboundTargets({
      allowPrivate: false,
      lookup: () => new Promise(() => {}),
      lookupTimeoutMs: 50,
    });
    expect(await targets.check('https://slow.attacker.test/')).toMatchObject({ ok: false, refused: false });
  });
});
