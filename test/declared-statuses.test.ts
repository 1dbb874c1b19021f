/**
 * The document says what each operation answers, and the checks that keep it so: the harness's
 * watch fails a test file on a status its route does not declare, and the route docs refuse a
 * documented route without a unique operationId. Tiny apps prove the checks; the real document
 * proves what they produced.
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { access } from '../src/http/access.js';
import { errors } from '../src/http/responses.js';
import { installRouteDocs } from '../src/http/route-docs.js';
import { startTestPlatform, type TestPlatform, watchDeclaredStatuses } from './support/harness.js';

describe('the declared-status watch', () => {
  async function tinyApp() {
    const app = Fastify();
    const undeclared = watchDeclaredStatuses(app);
    app.get('/teapot', { schema: { response: { 200: { type: 'object' } } } }, async (_r, reply) =>
      // A status the schema does not allow, on purpose.
      reply.code(418 as never).send({ detail: 'short and stout' } as never),
    );
    app.get(
      '/declared',
      { schema: { response: { 200: { type: 'object' }, ...errors(404) } } },
      async (_r, reply) => reply.code(404).send({ detail: 'Not found' }),
    );
    app.get('/ranged', { schema: { response: { '2XX': { type: 'object' } } } }, async (_r, reply) =>
      reply.code(201).send({}),
    );
    app.get('/defaulted', { schema: { response: { default: { type: 'object' } } } }, async (_r, reply) =>
      reply.code(409).send({ detail: 'taken' }),
    );
    app.get('/hidden', { schema: { hide: true } }, async (_r, reply) => reply.code(418).send({}));
    await app.ready();
    return { app, undeclared };
  }

  it('collects a status its route does not declare, naming method, route and status', async () => {
    const { app, undeclared } = await tinyApp();
    expect((await app.inject({ method: 'GET', url: '/teapot' })).statusCode).toBe(418);
    expect([...undeclared]).toEqual(['GET /teapot → 418']);
    await app.close();
  });

  it('passes a declared status, an exact code or a range', async () => {
    const { app, undeclared } = await tinyApp();
    expect((await app.inject({ method: 'GET', url: '/declared' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/ranged' })).statusCode).toBe(201);
    expect([...undeclared]).toEqual([]);
    await app.close();
  });

  it('does not take `default` as declaring every status', async () => {
    const { app, undeclared } = await tinyApp();
    await app.inject({ method: 'GET', url: '/defaulted' });
    expect([...undeclared]).toEqual(['GET /defaulted → 409']);
    await app.close();
  });

  it('exempts answers no route gave, and routes hidden from the document', async () => {
    const { app, undeclared } = await tinyApp();
    expect((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/hidden' })).statusCode).toBe(418);
    expect([...undeclared]).toEqual([]);
    await app.close();
  });
});

describe('operationIds', () => {
  const documented = (operationId?: string) => ({
    config: { access: access.public },
    schema: { tags: ['x'], ...(operationId ? { operationId } : {}) },
  });

  it('a documented route without an operationId fails the start', async () => {
    const app = Fastify();
    installRouteDocs(app);
    expect(() => app.get('/anonymous', documented(), async () => ({}))).toThrow(
      /GET \/anonymous needs a camelCase schema.operationId/,
    );
    await app.close();
  });

  it('two routes with one operationId fail the start', async () => {
    const app = Fastify();
    installRouteDocs(app);
    app.get('/one', documented('getThing'), async () => ({}));
    expect(() => app.post('/two', documented('getThing'), async () => ({}))).toThrow(
      /GET \/one and POST \/two share operationId getThing/,
    );
    await app.close();
  });

  it('hidden routes need none, and a GET route’s HEAD copy is not a second operation', async () => {
    const app = Fastify();
    installRouteDocs(app);
    app.get('/hidden', { config: { access: access.public }, schema: { hide: true } }, async () => ({}));
    app.get('/thing', documented('getThing'), async () => ({}));
    await expect(app.ready()).resolves.toBeDefined();
    expect((await app.inject({ method: 'HEAD', url: '/thing' })).statusCode).toBe(200);
    await app.close();
  });
});

describe('the OpenAPI document', () => {
  let t: TestPlatform;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document, read by path
  let doc: any;
  beforeAll(async () => {
    t = await startTestPlatform({}, { workers: false });
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(async () => t.close());

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, Record<string, unknown>>>).flatMap(
      ([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })),
    );

  it('every operation has a unique camelCase operationId', () => {
    const ids = operations().map(({ op }) => op.operationId as string);
    expect(ids.length).toBeGreaterThan(90);
    expect(ids.every((id) => /^[a-z][a-zA-Z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/api/v1/assistants'].post.operationId).toBe('createAssistant');
  });

  it('body routes declare 413, 415 and their validation status; id routes declare 404', () => {
    const create = doc.paths['/api/v1/assistants'].post.responses;
    expect(Object.keys(create)).toEqual(
      expect.arrayContaining(['201', '401', '403', '413', '415', '422', '429']),
    );
    expect(doc.paths['/calls/initiate'].post.responses).toHaveProperty('400');
    for (const { path, method, op } of operations()) {
      if (/\{[a-z_]+_id\}$/.test(path) && method !== 'post') {
        expect(op.responses, `${method} ${path}`).toHaveProperty('404');
      }
    }
  });

  it('the API key area and level are machine-readable', () => {
    const op = doc.paths['/api/v1/calls/{call_id}/end'].post;
    expect(op['x-api-key-area']).toBe('calls');
    expect(op['x-api-key-level']).toBe('read_write');
    expect(op.description).toMatch(/API keys need `calls: read_write`/);
    expect(op.description).toMatch(/X-CSRF-Token/);
    expect(doc.paths['/api/v1/auth/whoami'].get['x-api-key-area']).toBeUndefined();
  });

  it('the call export declares its CSV and JSON forms', () => {
    const content = doc.paths['/api/v1/calls/export'].get.responses['200'].content;
    expect(Object.keys(content).sort()).toEqual(['application/json', 'text/csv']);
    expect(content['text/csv'].schema.type).toBe('string');
    expect(content['application/json'].schema.type).toBe('array');
  });
});
