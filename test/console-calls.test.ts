/**
 * The console's calls pages and overview in headless Chromium, against a real listening platform on
 * the simulators: one real web call (the simulated phone talks to an assistant: greeting and two
 * answers, recorded), calls recorded through the platform's own write paths (statuses, a tool run and
 * a graph move), and a call with a transcript for the search. The list narrows by a filter and by a
 * search (both surviving a reload); the call page shows the transcript, a waterfall row per turn with
 * its numbers, the events and the recording player; the overview's charts add up to the seeded calls;
 * another organization's call is not found; the pages fit a phone-sized screen.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useBrowser } from './support/browser.js';
import { makeCall, type OurNumber } from './support/call-analytics-seed.js';
import { seedCall } from './support/call-seed.js';
import { pictureFromTop, signInAt } from './support/console-pages.js';
import { expectStatus, Factories } from './support/factories.js';
import { waitFor } from './support/harness.js';
import { askToBook, BOOK, type RigKeys, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import type { RigOrganization } from './support/voice-rig-vendors.js';
import { connectWebCall, createWebCall } from './support/web-call-client.js';

const THREE = "Yes, three o'clock works for me.";
const LONG = 60_000;

let rig: VoiceRig;
let f: Factories;
let org: RigOrganization;
let webCallId: number;
let phoneCallId: number;
let toolCallId: number;
let searchedCallId: number;
let strangerCallId: number;

const browser = useBrowser();
const picture = (name: string) => pictureFromTop(browser, name);
const signIn = (page: Page, path: string) => signInAt(rig.t.baseUrl!, page, org.admin, path);

async function get(path: string) {
  const response = await rig.t.app.inject({ url: path, headers: org.admin.headers });
  expectStatus(response, 200);
  return response.json();
}

/** A real web call in the organization: the greeting, two answers, the caller hangs up; its id once recorded. */
async function webCall(keys: RigKeys): Promise<number> {
  rig.stt.setScript(keys.stt, [BOOK, THREE]);
  rig.llm.setScript(keys.llm, [
    { text: 'Sure, which time suits you?' },
    { text: 'Booked for three. Anything else?' },
  ]);
  const created = await createWebCall(rig.t, org.admin, { assistant_id: org.assistantId });
  const { phone } = await connectWebCall(created);
  const quiet = { ms: 600, timeoutMs: 15_000 };
  await phone.waitForSpeech({ timeoutMs: 15_000 });
  await phone.waitForSilence(quiet);
  for (const fixture of ['book-appointment', 'three-oclock']) {
    const said = await phone.say(fixture);
    await phone.waitForReplyTo(said, { timeoutMs: 15_000 });
    await phone.waitForSilence(quiet);
  }
  await phone.hangUp();
  const id = created.call.id;
  await waitFor(async () => {
    const call = await get(`/api/v1/calls/${id}`);
    const turns = await get(`/api/v1/calls/${id}/turns`);
    return (call.status === 'completed' && turns.length >= 3) || undefined;
  }, 30_000);
  return id;
}

beforeAll(async () => {
  rig = await startVoiceRig();
  f = new Factories(rig.t);
  // A phone call through the carrier simulator: the platform calls, the phone asks to book; recorded.
  const phoned = await rig.call({
    heard: [BOOK],
    script: async (phone) => {
      await askToBook(phone);
      await phone.hangUp();
    },
  });
  org = phoned.org;
  phoneCallId = phoned.callId;
  await waitFor(
    async () => (await get(`/api/v1/calls/${phoneCallId}`)).recording?.status === 'completed' || undefined,
    20_000,
  );
  webCallId = await webCall(phoned.keys);

  const [ours] = await get('/api/v1/phone-numbers');
  const number: OurNumber = { id: ours.id, phoneNumber: org.number, assistantId: org.assistantId };
  const orgId = org.admin.organizationId;
  const yesterday = new Date(Date.now() - 86_400_000);
  toolCallId = await makeCall(rig.t, orgId, {
    number,
    direction: 'outbound',
    createdAt: new Date(),
    final: 'completed',
    durationSeconds: 95,
    events: [
      {
        type: 'call.tool',
        data: {
          name: 'lookup_order',
          arguments: { order: '1234' },
          ok: true,
          duration_ms: 140,
          result: 'shipped',
        },
      },
      {
        type: 'call.graph_transition',
        data: { from_node_id: 1, to_node_id: 2, edge_id: 5, reason: 'billing' },
      },
    ],
  });
  await makeCall(rig.t, orgId, { number, direction: 'inbound', createdAt: yesterday, final: 'busy' });
  await makeCall(rig.t, orgId, { number, direction: 'outbound', createdAt: yesterday, final: 'no-answer' });
  searchedCallId = (
    await seedCall(rig.t.database, orgId, {
      assistantId: org.assistantId,
      status: 'failed',
      transcript: [
        ['assistant', 'Hello, how can I help?'],
        ['user', 'The kangaroo exhibit tickets were charged twice.'],
      ],
    })
  ).id;
  const stranger = await f.carrierOrganization({ number: false });
  strangerCallId = (await seedCall(rig.t.database, stranger.admin.organizationId)).id;
}, 180_000);
afterAll(async () => {
  await rig?.close();
});

describe('the calls list', () => {
  it(
    'lists the calls, narrows them by a filter and by a search, and keeps both through a reload',
    async () => {
      const page = browser.page();
      await signIn(page, '/calls');
      const rows = page.getByRole('table', { name: 'Calls' }).locator('tbody tr');
      await expect.poll(() => rows.count()).toBe(6);
      await expect.poll(() => page.getByText('Page 1 of 1 (6 calls)').count()).toBe(1);
      expect(await page.getByRole('row', { name: /Web call/ }).count()).toBe(1);
      await picture('calls');

      await page.getByLabel('Status', { exact: true }).selectOption('busy');
      await page.waitForURL('**/console/calls?status=busy');
      await expect.poll(() => rows.count()).toBe(1);
      expect(await rows.first().textContent()).toContain('busy');
      await page.reload();
      await expect.poll(() => page.getByText('Page 1 of 1 (1 call)').count()).toBe(1);
      expect(await page.getByLabel('Status', { exact: true }).inputValue()).toBe('busy');
      const exported = await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href');
      expect(exported).toBe('/api/v1/calls/export?format=csv&status=busy');
      // The download goes through the session cookie, as the link would.
      const csv = await page.evaluate(async (href) => (await fetch(href!)).text(), exported);
      expect(csv.trim().split('\n')).toHaveLength(2);

      await page.getByLabel('Search calls').fill('kangaroo');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL('**/console/calls?q=kangaroo');
      await expect.poll(() => page.getByText('1 match').count()).toBe(1);
      await page.reload();
      await expect.poll(() => rows.count()).toBe(1);
      expect(await page.getByRole('heading', { name: 'Calls matching “kangaroo”' }).count()).toBe(1);
      await rows.first().getByRole('link').click();
      await page.waitForURL(`**/console/calls/${searchedCallId}`);
      await expect
        .poll(() => page.getByRole('list', { name: 'Transcript' }).textContent())
        .toContain('kangaroo');
    },
    LONG,
  );
});

describe('the overview', () => {
  it(
    'is the home page: headline numbers and charts that add up to the seeded calls',
    async () => {
      const page = browser.page();
      await signIn(page, '/');
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      const report = await get('/api/v1/calls/analytics?time_zone=UTC');
      // The phone call, the web call and three recorded ones (the seeded search call has no rollup).
      expect(report.totals).toMatchObject({ calls: 5, by_status: { completed: 3, busy: 1, 'no-answer': 1 } });
      const calls = page.locator('.figure', { hasText: /^Calls/ }).locator('dd');
      await expect.poll(() => calls.textContent()).toBe('5');
      const chart = page.getByRole('img', { name: 'Calls per day, by outcome' });
      expect(await chart.count()).toBe(1);
      // One bar piece per day and outcome that had calls; the table for screen readers has the numbers.
      const pieces = report.per_day.flatMap((day: { by_status: Record<string, number> }) =>
        Object.values(day.by_status).filter((n) => n > 0),
      );
      expect(await chart.locator('rect').count()).toBe(pieces.length);
      const table = page.getByRole('table', { name: 'Calls per day, by outcome' });
      const sums = await table
        .locator('tbody tr')
        .evaluateAll((rows) =>
          rows.map((row) =>
            [...row.querySelectorAll('td')].reduce((sum, cell) => sum + (Number(cell.textContent) || 0), 0),
          ),
        );
      expect(sums.reduce((a, b) => a + b, 0)).toBe(5);
      expect(sums).toHaveLength(report.per_day.length);
      const latency = page.getByRole('table', { name: 'Turn latency percentiles by stage (ms)' });
      expect(await latency.getByRole('row', { name: /End to end/ }).textContent()).toContain(
        String(Math.round(report.latency.end_to_end_ms.p50)),
      );
      await picture('overview');

      await page.getByLabel('Days shown').selectOption('7');
      await page.waitForURL('**/console/?days=7');
      await expect.poll(() => table.locator('tbody tr').count()).toBe(7);
    },
    LONG,
  );

  it(
    'fits a phone-sized screen: overview, list and call page scroll only down',
    async () => {
      const page = browser.page();
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn(page, '/calls');
      await page.getByRole('button', { name: 'Menu' }).click();
      await page
        .getByRole('navigation', { name: 'Sections' })
        .getByRole('link', { name: 'Overview' })
        .click();
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
      for (const path of ['/', '/calls', `/calls/${webCallId}`]) {
        await page.goto(`${rig.t.baseUrl}/console${path}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        await page.locator('.panel').first().waitFor();
        const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
        expect(width, path).toBeLessThanOrEqual(390);
      }
    },
    LONG,
  );
});

describe('a call', () => {
  it(
    'shows the real call: facts, recording player, transcript, and a waterfall row per turn with numbers',
    async () => {
      const page = browser.page();
      await signIn(page, `/calls/${webCallId}`);
      const transcript = page.getByRole('list', { name: 'Transcript' });
      await expect.poll(() => transcript.textContent()).toContain(BOOK);
      const lines = await transcript.locator('li').allTextContents();
      expect(lines.findIndex((line) => line.includes(BOOK))).toBeLessThan(
        lines.findIndex((line) => line.includes(THREE)),
      );
      expect(lines.filter((line) => line.startsWith('Caller:'))).toHaveLength(2);
      expect(await page.locator('.facts').first().textContent()).toContain('completed');

      const turns = await get(`/api/v1/calls/${webCallId}/turns`);
      const rows = page.locator('.waterfall-turn');
      await expect.poll(() => rows.count()).toBe(turns.length);
      const answer = turns.find((turn: { position: number }) => turn.position === 1);
      const second = page.getByRole('img', { name: /^Turn 1:/ });
      const label = (await second.getAttribute('aria-label')) ?? '';
      expect(label).toContain(
        `Model first token ${Math.round(answer.marks.llm_first_token_at - answer.marks.llm_request_at)} ms`,
      );
      expect(label).toMatch(/End of speech \d+ ms/);
      expect(await second.locator('rect').count()).toBeGreaterThanOrEqual(4);
      // The table beside it has the same figures.
      const table = page.getByRole('table', { name: 'Latency of each turn' });
      expect(await table.getByRole('row', { name: new RegExp(BOOK) }).textContent()).toContain(
        `${answer.end_to_end_ms} ms`,
      );
      await picture('call');

      // The phone call was recorded: its page has the player, and the browser may fetch the audio.
      await page.goto(`${rig.t.baseUrl}/console/calls/${phoneCallId}`);
      const audio = page.locator('audio[controls]');
      await expect
        .poll(() => audio.getAttribute('src'))
        .toBe(`${rig.t.baseUrl}/api/v1/calls/${phoneCallId}/recording`);
      const type = await page.evaluate(
        async (src) => (await fetch(src!, { headers: { range: 'bytes=0-43' } })).headers.get('content-type'),
        await audio.getAttribute('src'),
      );
      expect(type).toBe('audio/wav');
    },
    LONG,
  );

  it(
    'lists tool runs and graph moves, deletes an ended call, and says another organization’s call is not found',
    async () => {
      const page = browser.page();
      page.on('dialog', (dialog) => void dialog.accept());
      await signIn(page, `/calls/${toolCallId}`);
      const events = page.getByRole('table', { name: /What happened during the call/ });
      await expect.poll(() => events.textContent()).toContain('lookup_order');
      const tool = await events.getByRole('row', { name: /call\.tool/ }).textContent();
      expect(tool).toContain('✓ ok');
      expect(tool).toContain('in 140 ms');
      expect(tool).toContain('{"order":"1234"}');
      expect(await events.getByRole('row', { name: /graph_transition/ }).textContent()).toContain(
        'from node 1 to node 2 (billing)',
      );
      expect(await page.getByText('This call was not recorded.').count()).toBe(1);

      await page.getByRole('button', { name: 'Delete' }).click();
      await page.waitForURL('**/console/calls');
      const gone = await rig.t.app.inject({ url: `/api/v1/calls/${toolCallId}`, headers: org.admin.headers });
      expect(gone.statusCode).toBe(404);

      await page.goto(`${rig.t.baseUrl}/console/calls/${strangerCallId}`);
      await expect.poll(() => page.getByRole('heading', { name: 'Call not found' }).count()).toBe(1);
    },
    LONG,
  );
});
