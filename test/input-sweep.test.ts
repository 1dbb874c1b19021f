/**
 * The input sweeps (issue 14 items 2–4): walks the app's own OpenAPI document and sends, to every
 * operation, input the database would choke on — a NUL character in every string place (path,
 * query, JSON body including object keys, form body), integers written any way but plain decimal
 * digits, integers beyond 32 bits, and dates outside the years 0001–9999. Each must be refused with
 * the route's validation status and an issue whose `loc` names the place; none may answer 5xx. New
 * routes are swept as soon as they are documented.
 */
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import {
  bodyWith,
  documentedOperations,
  kindsOf,
  leavesOf,
  type Operation,
  urlOf,
} from './support/openapi-walk.js';

const NUL = 'a\u0000b';

const t = useTestPlatform();
let admin: TestUser;
let operations: Operation[];
beforeAll(async () => {
  admin = await new Factories(t).user();
  operations = await documentedOperations(t);
});

/** One request of a sweep: what it sends, and the `loc` its refusal must name. */
interface Probe {
  name: string;
  operation: Operation;
  url: string;
  payload?: string;
  contentType?: string;
  loc: Array<string | number>;
}

interface Tally {
  probes: number;
  operations: Set<string>;
  serverErrors: string[];
  unrefused: string[];
}

/** Sends every probe; collects the 5xx answers and the answers that do not refuse at `loc`. */
async function run(probes: Probe[]): Promise<Tally> {
  const tally: Tally = { probes: 0, operations: new Set(), serverErrors: [], unrefused: [] };
  for (const probe of probes) {
    const response = await t.app.inject({
      method: probe.operation.method,
      url: probe.url,
      headers: { ...admin.headers, ...(probe.contentType ? { 'content-type': probe.contentType } : {}) },
      ...(probe.payload !== undefined ? { payload: probe.payload } : {}),
    });
    tally.probes += 1;
    tally.operations.add(`${probe.operation.method} ${probe.operation.path}`);
    if (response.statusCode >= 500) tally.serverErrors.push(`${probe.name} → ${response.statusCode}`);
    else if (!refusedAt(response, probe.loc))
      tally.unrefused.push(`${probe.name} → ${response.statusCode} ${response.body.slice(0, 300)}`);
  }
  return tally;
}

/** A validation answer (422, or 400 on the routes documented so) with an issue at `loc`. */
function refusedAt(response: LightMyRequestResponse, loc: Array<string | number>): boolean {
  if (response.statusCode !== 422 && response.statusCode !== 400) return false;
  const detail = (response.json() as { detail?: unknown }).detail;
  if (!Array.isArray(detail)) return false;
  return detail.some((issue: { loc?: unknown }) => JSON.stringify(issue.loc) === JSON.stringify(loc));
}

const label = (operation: Operation, where: string) => `${operation.method} ${operation.path} ${where}`;
const hasJsonBody = (operation: Operation) => Boolean(operation.body['application/json']);
/** Write operations send `{}` when the probe is elsewhere, so a missing body is not what answers. */
const emptyBody = (operation: Operation): Partial<Probe> =>
  hasJsonBody(operation) ? { payload: '{}', contentType: 'application/json' } : {};
const withQuery = (operation: Operation, name: string, raw: string) =>
  `${urlOf(operation)}?${encodeURIComponent(name)}=${encodeURIComponent(raw)}`;

/** Probes of `value` in every path and query parameter that `accepts`. */
function parameterProbes(accepts: (kinds: string[]) => boolean, values: string[], what: string): Probe[] {
  const probes: Probe[] = [];
  for (const operation of operations) {
    for (const parameter of operation.parameters) {
      if (parameter.in !== 'path' && parameter.in !== 'query') continue;
      const schema =
        parameter.schema.type === 'array'
          ? (parameter.schema.items as Record<string, unknown>)
          : parameter.schema;
      if (!accepts(kindsOf(schema ?? {}))) continue;
      for (const value of values) {
        const url =
          parameter.in === 'path'
            ? urlOf(operation, (name) => (name === parameter.name ? encodeURIComponent(value) : undefined))
            : withQuery(operation, parameter.name, value);
        probes.push({
          name: label(operation, `${parameter.in} ${parameter.name}=${JSON.stringify(value)} (${what})`),
          operation,
          url,
          ...emptyBody(operation),
          loc: [parameter.in, parameter.name],
        });
      }
    }
  }
  return probes;
}

/** Probes of `value` at every place of a JSON body whose kinds `accepts`. */
function jsonBodyProbes(accepts: (kind: string) => boolean, values: unknown[], what: string): Probe[] {
  const probes: Probe[] = [];
  for (const operation of operations) {
    const schema = operation.body['application/json'];
    if (!schema) continue;
    for (const leaf of leavesOf(schema)) {
      if (!accepts(leaf.kind)) continue;
      for (const value of values) {
        probes.push({
          name: label(operation, `body ${leaf.path.join('.')}=${JSON.stringify(value)} (${what})`),
          operation,
          url: urlOf(operation),
          payload: JSON.stringify(bodyWith(leaf.path, value)),
          contentType: 'application/json',
          loc: ['body', ...leaf.path],
        });
      }
    }
  }
  return probes;
}

function report(what: string, tally: Tally): void {
  // The counts go into the issue's closing note.
  console.log(
    `${what}: ${tally.probes} probes over ${tally.operations.size} operations, ${tally.serverErrors.length} answered 5xx, ${tally.unrefused.length} not refused at their loc`,
  );
  expect(tally.serverErrors, `${what}: 5xx answers`).toEqual([]);
  expect(tally.unrefused, `${what}: not refused at their loc`).toEqual([]);
}

describe('the sweep is not vacuous', () => {
  it('finds parameters and body fields of every kind', () => {
    const parameters = operations.flatMap((o) => o.parameters);
    expect(parameters.filter((p) => p.in === 'path').length).toBeGreaterThan(40);
    expect(parameters.filter((p) => p.in === 'query').length).toBeGreaterThan(20);
    const leaves = operations.flatMap((o) =>
      o.body['application/json'] ? leavesOf(o.body['application/json']) : [],
    );
    expect(leaves.filter((l) => l.kind === 'string').length).toBeGreaterThan(100);
    expect(leaves.filter((l) => l.kind === 'integer').length).toBeGreaterThan(20);
    expect(leaves.filter((l) => l.kind === 'open-object').length).toBeGreaterThan(5);
    expect(operations.some((o) => o.body['application/x-www-form-urlencoded'])).toBe(true);
  });
});

describe('NUL characters never reach the database', () => {
  it('in every path and query parameter', async () => {
    report('NUL in parameters', await run(parameterProbes(() => true, [NUL], 'NUL')));
  });

  it('in every string field of every JSON body', async () => {
    report(
      'NUL in JSON bodies',
      await run(jsonBodyProbes((kind) => kind === 'string' || kind === 'date', [NUL], 'NUL')),
    );
  });

  it('in the keys and values of every open object of every JSON body', async () => {
    const probes: Probe[] = [];
    for (const operation of operations) {
      const schema = operation.body['application/json'];
      if (!schema) continue;
      for (const leaf of leavesOf(schema).filter((l) => l.kind === 'open-object')) {
        for (const [object, loc] of [
          [{ [NUL]: 'value' }, [...leaf.path, NUL]],
          [{ note: { deeper: [NUL] } }, [...leaf.path, 'note', 'deeper', 0]],
        ] as const) {
          probes.push({
            name: label(operation, `body ${leaf.path.join('.')} = ${JSON.stringify(object)}`),
            operation,
            url: urlOf(operation),
            payload: JSON.stringify(bodyWith(leaf.path, object)),
            contentType: 'application/json',
            loc: ['body', ...loc],
          });
        }
      }
    }
    expect(probes.length).toBeGreaterThan(10);
    report('NUL in open objects', await run(probes));
  });

  it('in every field of every form body', async () => {
    const probes: Probe[] = [];
    for (const operation of operations) {
      const schema = operation.body['application/x-www-form-urlencoded'];
      if (!schema) continue;
      for (const leaf of leavesOf(schema).filter((l) => l.kind === 'string')) {
        probes.push({
          name: label(operation, `form ${leaf.path.join('.')}`),
          operation,
          url: urlOf(operation),
          payload: `${encodeURIComponent(String(leaf.path[0]))}=${encodeURIComponent(NUL)}`,
          contentType: 'application/x-www-form-urlencoded',
          loc: ['body', ...leaf.path],
        });
      }
    }
    expect(probes.length).toBeGreaterThan(0);
    report('NUL in form bodies', await run(probes));
  });

  it('in a JSON body that is a bare string', async () => {
    // The parser hands the handler whatever JSON it was given; a schema-less reader must not see NUL.
    const login = operations.find((o) => o.path === '/api/v1/auth/login')!;
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: JSON.stringify({ email: 'x@example.test', password: NUL }),
      headers: { 'content-type': 'application/json' },
    });
    expect(login).toBeDefined();
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'password'], msg: 'The text holds a NUL character (U+0000)', type: 'string_nul' },
    ]);
  });
});

/** Integers as users type them by mistake, or as an attacker would: all but plain decimal digits. */
const NOT_DECIMAL = [
  '0x1',
  '1e0',
  '+1',
  ' 1',
  '1 ',
  '1.',
  '1.0',
  '-0',
  '0b1',
  '0o1',
  '1_0',
  '١',
  'Infinity',
  '',
];

describe('integer ids and integer query parameters are plain decimal digits', () => {
  it('refuses every other spelling in every integer path and query parameter', async () => {
    const probes = parameterProbes((kinds) => kinds.includes('integer'), NOT_DECIMAL, 'not decimal');
    expect(probes.length).toBeGreaterThan(40 * NOT_DECIMAL.length);
    report('non-decimal integers', await run(probes));
  });

  it('refuses integers beyond 32 bits in every integer parameter', async () => {
    const probes = parameterProbes(
      (kinds) => kinds.includes('integer'),
      ['2147483648', '99999999999999999999'],
      'range',
    );
    report('out-of-range integer parameters', await run(probes));
  });

  it('still takes plain digits, leading zeros included', async () => {
    const response = await t.app.inject({
      method: 'GET',
      url: '/api/v1/assistants?skip=0&limit=010',
      headers: admin.headers,
    });
    expect(response.statusCode).toBe(200);
  });
});

describe('input the database would reject is refused first', () => {
  it('integers beyond 32 bits in every integer field of every JSON body', async () => {
    const probes = jsonBodyProbes(
      (kind) => kind === 'integer',
      [2_147_483_648, -2_147_483_649, 2 ** 53],
      'range',
    );
    report('out-of-range integers in bodies', await run(probes));
  });

  it('dates outside 0001–9999 in every date parameter and body field', async () => {
    const years = [
      '0000-01-01T00:00:00Z',
      '10000-01-01T00:00:00Z',
      '+010000-01-01T00:00:00Z',
      '-000001-01-01T00:00:00Z',
    ];
    const probes = [
      ...parameterProbes((kinds) => kinds.includes('date'), years, 'year'),
      ...jsonBodyProbes((kind) => kind === 'date', years, 'year'),
    ];
    expect(probes.length).toBeGreaterThan(4);
    report('dates out of range', await run(probes));
  });

  it('huge numbers in every number field of every JSON body never answer 5xx', async () => {
    const probes = jsonBodyProbes((kind) => kind === 'number', [1e300, -1e300], 'range');
    const tally = await run(probes);
    console.log(`huge numbers: ${tally.probes} probes, ${tally.serverErrors.length} answered 5xx`);
    expect(tally.serverErrors).toEqual([]);
  });
});
