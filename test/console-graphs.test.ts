/**
 * The console's graphs pages in headless Chromium against a real listening platform: a graph created
 * in the page, two nodes and two edges added in the side form and saved, drawn again after a reload;
 * a structure the API refuses (no entry node, an edge without its keywords) listed at the top and
 * shown at the edge's field; a simulated conversation whose path lights up on the drawing, with its
 * steps listed and the analytics of a recorded session; another organization's graph not found; the
 * page on a phone-sized screen.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { useBrowser } from './support/browser.js';
import { fieldError, pictureFromTop, signInAt } from './support/console-pages.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform(() => ({}), { listen: true });
const browser = useBrowser();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

const LONG = 60_000;
const picture = (name: string) => pictureFromTop(browser, name);
const signIn = (page: Page, user: TestUser, path: string) => signInAt(t.baseUrl!, page, user, path);

/** Front desk (entry) → Billing on "refund" → Goodbye (exit) on "bye", made through the API. */
async function supportGraph(user: TestUser) {
  const ids = [
    await f.assistant(user, 'Front desk'),
    await f.assistant(user, 'Billing'),
    await f.assistant(user, 'Goodbye'),
  ];
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers: user.headers,
    payload: {
      name: 'Support line',
      nodes: [
        { assistant_id: ids[0], node_type: 'entry' },
        { assistant_id: ids[1], node_type: 'standard' },
        { assistant_id: ids[2], node_type: 'exit' },
      ],
      edges: [
        {
          from_node_id: 0,
          to_node_id: 1,
          condition_type: 'intent',
          intent_pattern: 'refund, invoice',
          handoff_sentence: 'Let me pass you to billing.',
        },
        { from_node_id: 1, to_node_id: 2, condition_type: 'intent', intent_pattern: 'bye' },
      ],
    },
  });
  expectStatus(created, 201);
  return created.json() as { id: number; nodes: Array<{ id: number }>; edges: Array<{ id: number }> };
}

const drawnNode = (page: Page, name: string) =>
  page.locator('svg.graph-drawing g.graph-node', { hasText: name });

describe('graphs', () => {
  it(
    'creates a graph, adds two nodes and an edge, saves, and draws it again after a reload',
    async () => {
      const user = await f.user();
      for (const name of ['Front desk', 'Billing', 'Goodbye']) await f.assistant(user, name);
      const page = browser.page();
      await signIn(page, user, '/graphs');
      await expect.poll(() => page.getByText('No graphs yet').count()).toBe(1);

      await page.getByLabel('Name', { exact: true }).fill('Support line');
      await page.getByLabel('Entry assistant').selectOption({ label: 'Front desk' });
      await page.getByLabel('Description').fill('Routes callers to billing');
      await page.getByRole('button', { name: 'Create the graph' }).click();
      await page.waitForURL(/\/console\/graphs\/\d+$/);
      const graphId = Number(new URL(page.url()).pathname.split('/').pop());
      await expect.poll(() => drawnNode(page, 'Front desk').count()).toBe(1);

      await page.getByRole('button', { name: 'Add a node' }).click();
      await page.getByLabel('Assistant', { exact: true }).selectOption({ label: 'Billing' });
      await page.getByRole('button', { name: 'Add a node' }).click();
      await page.getByLabel('Assistant', { exact: true }).selectOption({ label: 'Goodbye' });
      await page.getByLabel('Node type').selectOption('exit');
      await page.getByRole('button', { name: 'Add an edge' }).click();
      await page.getByLabel('From', { exact: true }).selectOption({ label: 'Front desk (node 0)' });
      await page.getByLabel('To', { exact: true }).selectOption({ label: 'Billing (node 1)' });
      await page.getByLabel('Keywords').fill('refund, invoice');
      await page.getByLabel('Handoff sentence').fill('Let me pass you to billing.');
      await page.getByRole('button', { name: 'Add an edge' }).click();
      await page.getByLabel('From', { exact: true }).selectOption({ label: 'Billing (node 1)' });
      await page.getByLabel('To', { exact: true }).selectOption({ label: 'Goodbye (node 2)' });
      await page.getByLabel('Keywords').fill('bye');
      await page.getByRole('button', { name: 'Save structure' }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('3 nodes, 2 edges');

      // The API holds what the page drew.
      const read = await t.app.inject({ url: `/api/v1/assistant-graphs/${graphId}`, headers: user.headers });
      expect(read.json()).toMatchObject({
        name: 'Support line',
        description: 'Routes callers to billing',
        nodes: [
          { assistant_name: 'Front desk', node_type: 'entry' },
          { assistant_name: 'Billing', node_type: 'standard' },
          { assistant_name: 'Goodbye', node_type: 'exit' },
        ],
        edges: [
          {
            condition_type: 'intent',
            intent_pattern: 'refund, invoice',
            handoff_sentence: 'Let me pass you to billing.',
          },
          { condition_type: 'intent', intent_pattern: 'bye' },
        ],
      });
      const [front, billing] = read.json().nodes as Array<{ id: number }>;
      expect(read.json().edges[0]).toMatchObject({ from_node_id: front!.id, to_node_id: billing!.id });

      await page.reload();
      await expect.poll(() => drawnNode(page, 'Billing').count()).toBe(1);
      expect(await drawnNode(page, 'Goodbye').textContent()).toContain('exit');
      expect(await drawnNode(page, 'Front desk').textContent()).toContain('entry');
      const edge = page.locator('svg.graph-drawing g.graph-edge').first();
      expect(await edge.locator('text').textContent()).toBe('kw: refund, invoice');
      expect(await edge.locator('title').textContent()).toBe('kw: refund, invoice');
      expect(await page.getByRole('table', { name: 'Edges' }).textContent()).toContain('Billing (node 1)');
      await picture('graph');

      await page.getByRole('link', { name: 'All graphs' }).click();
      const row = page.getByRole('row', { name: /Support line/ });
      await expect.poll(() => row.textContent()).toContain('Routes callers to billing');
      expect((await row.locator('td').allTextContents()).slice(0, 2)).toEqual(['3', '2']);
      await picture('graphs');
    },
    LONG,
  );

  it(
    'lists a refused structure by node and edge, and shows the problem at the edge’s field',
    async () => {
      const user = await f.user();
      const graph = await supportGraph(user);
      const page = browser.page();
      await signIn(page, user, `/graphs/${graph.id}`);
      // An arrow of the drawing opens its edge in the side form.
      await page.locator('svg.graph-drawing g.graph-edge', { hasText: 'kw: refund' }).click();
      await expect.poll(() => page.getByLabel('Keywords').inputValue()).toBe('refund, invoice');
      expect(await page.getByLabel('Handoff sentence').inputValue()).toBe('Let me pass you to billing.');
      // The entry becomes a standard node, and a new edge has no keywords: both refused at once.
      await page.getByRole('button', { name: 'Edit Front desk (node 0)' }).click();
      await page.getByLabel('Node type').selectOption('standard');
      await page.getByRole('button', { name: 'Add an edge' }).click();
      await page.getByRole('button', { name: 'Save structure' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'not saved' });
      await expect.poll(() => alert.textContent()).toContain('exactly one entry node');
      expect(await alert.textContent()).toContain(
        'Edge 2: edge 2: condition_type intent needs intent_pattern',
      );
      expect(await fieldError(page, 'Keywords')).toContain('needs intent_pattern');
      // Nothing was stored.
      const read = await t.app.inject({ url: `/api/v1/assistant-graphs/${graph.id}`, headers: user.headers });
      expect(read.json().edges).toHaveLength(2);
      expect(read.json().nodes[0].node_type).toBe('entry');

      // Discarding goes back to the saved structure.
      await page.getByRole('button', { name: 'Discard changes' }).click();
      expect(await page.getByRole('table', { name: 'Edges' }).locator('tbody tr').count()).toBe(2);
    },
    LONG,
  );

  it(
    'simulates a conversation, lists its steps and highlights its path; shows the analytics',
    async () => {
      const user = await f.user();
      const graph = await supportGraph(user);
      // One recorded conversation, front desk then billing, for the analytics.
      const sessions = t.platform.services.graphSessions;
      const tenant = new Tenant(user.organizationId);
      const session = await sessions.start(tenant, { graphId: graph.id });
      await sessions.transition(tenant, session.id, {
        toNodeId: graph.nodes[1]!.id,
        edgeId: graph.edges[0]!.id,
        reason: 'recorded for the test',
        at: new Date(),
      });

      const page = browser.page();
      await signIn(page, user, `/graphs/${graph.id}`);
      await expect.poll(() => drawnNode(page, 'Billing').textContent()).toContain('1 session');
      const analytics = page.getByRole('region', { name: 'Analytics' });
      await expect
        .poll(() => analytics.getByRole('row', { name: /^Billing \(id/ }).textContent())
        .toContain('1');

      await page
        .getByLabel("Caller's messages (one per line)")
        .fill('I want a refund please\nthat is all, bye');
      await page.getByRole('button', { name: 'Run the simulation' }).click();
      const steps = page.locator('.graph-steps li');
      await expect.poll(() => steps.count()).toBe(2);
      expect(await steps.nth(0).textContent()).toContain('Front desk (node 0) → Billing (node 1) by edge 0');
      expect(await steps.nth(0).textContent()).toContain('Let me pass you to billing.');
      expect(await steps.nth(1).textContent()).toContain('Billing (node 1) → Goodbye (node 2)');
      expect(await page.locator('.graph-simulation').textContent()).toContain('ended at an exit node');
      expect(await page.locator('svg g.graph-node.on-path').count()).toBe(3);
      expect(await page.locator('svg g.graph-edge.on-path').count()).toBe(2);
      expect(await page.getByRole('table', { name: 'Nodes' }).first().textContent()).toContain('on the path');
      await page.locator('svg.graph-drawing').scrollIntoViewIfNeeded();
      await browser.screenshot('graph-simulate');

      // A message that matches nothing stays at the entry: nothing else is lit.
      await page.getByLabel("Caller's messages (one per line)").fill('hello there');
      await page.getByRole('button', { name: 'Run the simulation' }).click();
      await expect.poll(() => page.locator('svg g.graph-node.on-path').count()).toBe(1);
      expect(await page.locator('svg g.graph-edge.on-path').count()).toBe(0);
    },
    LONG,
  );

  it(
    "shows another organization's graph as not found",
    async () => {
      const owner = await f.user();
      const graph = await supportGraph(owner);
      const stranger = await f.user();
      const page = browser.page();
      await signIn(page, stranger, `/graphs/${graph.id}`);
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not found/i);
      expect(await page.locator('svg.graph-drawing').count()).toBe(0);
    },
    LONG,
  );

  it(
    'works on a phone-sized screen: the drawing scrolls in its box, the form comes below it',
    async () => {
      const user = await f.user();
      const graph = await supportGraph(user);
      const page = browser.page();
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn(page, user, `/graphs/${graph.id}`);
      await expect.poll(() => drawnNode(page, 'Goodbye').count()).toBe(1);
      const widths = {
        page: await page.evaluate('document.documentElement.scrollWidth'),
        canvas: await page.locator('.graph-canvas').evaluate((canvas) => canvas.clientWidth),
        drawing: await page.locator('svg.graph-drawing').evaluate((svg) => svg.clientWidth),
      };
      expect(widths.page).toBeLessThanOrEqual(390);
      expect(widths.drawing).toBeGreaterThan(widths.canvas);
      // A node picked with the keyboard opens its form below the drawing.
      await drawnNode(page, 'Billing').focus();
      await page.keyboard.press('Enter');
      const billing = String(await assistantId(user, 'Billing'));
      const assistant = page.getByLabel('Assistant', { exact: true });
      await expect.poll(() => assistant.inputValue()).toBe(billing);
      const side = (await page.locator('#graph-side').boundingBox())!;
      const canvas = (await page.locator('.graph-canvas').boundingBox())!;
      expect(side.y).toBeGreaterThan(canvas.y + canvas.height);
    },
    LONG,
  );
});

async function assistantId(user: TestUser, name: string): Promise<number> {
  const listed = await t.app.inject({ url: '/api/v1/assistants?limit=1000', headers: user.headers });
  return (listed.json() as Array<{ id: number; name: string }>).find((a) => a.name === name)!.id;
}
