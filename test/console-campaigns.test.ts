/**
 * The console's campaigns pages in headless Chromium, against a real listening platform and the
 * carrier_a simulator: a campaign created in the page (a missing name refused at its field), a CSV
 * imported with a column mapping where one row is bad (its row error shown), a template previewed
 * (and a broken one refused at its field), the campaign started and watched to the end live (the
 * progress bar reaches 100% without a reload), its executions listed; pause, resume and stop
 * following the status; another organization's campaign not found; a phone-sized screen.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { useBrowser } from './support/browser.js';
import { fieldError, pictureFromTop, signInAt } from './support/console-pages.js';
import { type CarrierOrganization, expectStatus, Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const sim = new CarrierASimulator();
beforeAll(() => sim.start());
// Registered before the platform's: runs after it closed (after-hooks run in reverse order).
afterAll(() => sim.stop());
const t = useTestPlatform(() => ({ CARRIER_A_BASE_URL: sim.baseUrl, CAMPAIGN_SWEEP_INTERVAL_SECONDS: '1' }), {
  listen: true,
});
const browser = useBrowser();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

const LONG = 60_000;
const picture = (name: string) => pictureFromTop(browser, name);
const signIn = (page: Page, user: TestUser, path: string) => signInAt(t.baseUrl!, page, user, path);

/** A campaign made through the API, with contacts, for the tests that are not about creating one. */
async function apiCampaign(org: CarrierOrganization, body: Record<string, unknown>, phones: string[]) {
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: org.admin.headers,
    payload: { name: 'Follow-up', campaign_type: 'call', assistant_id: org.assistantId, ...body },
  });
  expectStatus(created, 201);
  const id = created.json().id as number;
  if (phones.length === 0) return id;
  const added = await t.app.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${id}/contacts`,
    headers: org.admin.headers,
    payload: { contacts: phones.map((phone_number) => ({ phone_number })) },
  });
  expectStatus(added, 200);
  return id;
}

const buttonState = (page: Page, name: string) => page.getByRole('button', { name, exact: true }).isEnabled();

describe('campaigns', () => {
  it(
    'creates a campaign, imports a mapped CSV with a bad row, previews a template, and watches it complete live',
    async () => {
      const org = await f.carrierOrganization({ sim, assistantName: 'Outreach' });
      sim.setCallOutcome('+14157779001', { status: 'completed', durationSeconds: 20 });
      sim.setCallOutcome('+14157779002', { status: 'completed', durationSeconds: 35 });
      const page = browser.page();
      page.on('dialog', (dialog) => void dialog.accept());
      await signIn(page, org.admin, '/campaigns');
      await expect.poll(() => page.getByText('No campaigns yet').count()).toBe(1);

      // A missing name is refused at its field.
      await expect.poll(() => page.getByRole('option', { name: 'Outreach' }).count()).toBe(1);
      await page.getByLabel('Assistant', { exact: true }).selectOption({ label: 'Outreach' });
      await page.getByRole('button', { name: 'Create the campaign' }).click();
      expect(await fieldError(page, 'Name')).toMatch(/least|character|empty/i);

      await page.getByLabel('Name', { exact: true }).fill('Spring renewals');
      await page
        .getByLabel('Welcome message', { exact: true })
        .fill('Hello {{ name | title_case }}, about your {{ plan }} plan');
      await page.getByLabel('Fallback values').fill('plan = basic');
      await page.getByLabel('Minutes between attempts').fill('0');
      await page.getByRole('button', { name: 'Create the campaign' }).click();
      await page.waitForURL(/\/console\/campaigns\/\d+$/);
      const id = Number(new URL(page.url()).pathname.split('/').pop());
      await page.getByRole('heading', { level: 1, name: 'Spring renewals' }).waitFor();
      const stored = await t.app.inject({ url: `/api/v1/campaigns/${id}`, headers: org.admin.headers });
      expect(stored.json()).toMatchObject({
        name: 'Spring renewals',
        status: 'draft',
        assistant_id: org.assistantId,
        fallback_values: { plan: 'basic' },
        retry_delay_minutes: 0,
        max_attempts: 3,
      });
      // A draft can start or stop, not pause.
      expect(await buttonState(page, 'Start')).toBe(true);
      expect(await buttonState(page, 'Pause')).toBe(false);
      expect(await buttonState(page, 'Stop')).toBe(true);

      // The import: headers the API would not recognise, mapped by hand; row 2 has no phone number.
      const csv =
        'Contact;Who;Plan\n+1 415 777 9001;ada lovelace;gold\nnot a number;bad row;silver\n(415) 777-9002;bob stone;basic\n';
      await page
        .getByLabel('Contacts file (CSV or JSON)')
        .setInputFiles({ name: 'renewals.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
      const sample = page.getByRole('table', { name: /The file: 3 columns, 3 rows/ });
      await expect
        .poll(() => sample.getByRole('columnheader').allTextContents())
        .toEqual(['Contact', 'Who', 'Plan']);
      expect(await sample.getByRole('row').nth(1).textContent()).toContain('ada lovelace');
      await page.getByLabel('Column "Contact"').selectOption('phone_number');
      await page.getByLabel('Column "Who"').selectOption('name');
      await page.getByLabel('Column "Plan"').selectOption({ label: 'Custom field "Plan"' });
      await page.getByRole('button', { name: 'Import the contacts' }).click();
      await expect
        .poll(() => page.getByRole('status').filter({ hasText: 'imported' }).textContent())
        .toBe('2 imported, 0 duplicates, 1 invalid.');
      const rowErrors = page.getByRole('table', { name: 'Rows not imported' });
      const bad = rowErrors.getByRole('row').nth(1);
      expect(await bad.getByRole('cell').first().textContent()).toBe('2');
      expect(await bad.getByRole('cell').nth(1).textContent()).toMatch(/phone/i);
      const contacts = page.getByRole('region', { name: 'Contacts' });
      await expect
        .poll(() => contacts.getByRole('row', { name: /\+14157779001/ }).textContent())
        .toContain('ada lovelace');
      expect(await contacts.getByRole('row', { name: /\+14157779001/ }).textContent()).toContain(
        'Plan: gold',
      );
      await picture('campaign-import');

      // Template preview: a broken template is refused at its field; the campaign's renders.
      const preview = page.getByRole('region', { name: 'Template preview' });
      const welcome = preview.getByLabel('Welcome message', { exact: true });
      await welcome.fill('Hello {{ name | ');
      await preview.getByRole('button', { name: 'Preview' }).click();
      expect(await fieldError(page, 'Welcome message')).toMatch(/\S/);
      await welcome.fill('Hello {{ name | title_case }}, about your {{ plan }} plan');
      await preview.getByLabel('Sample contact').fill('name = ada lovelace\nplan = gold');
      await preview.getByRole('button', { name: 'Preview' }).click();
      await expect
        .poll(() => preview.locator('blockquote').first().textContent())
        .toBe('Hello Ada Lovelace, about your gold plan');
      await preview.getByLabel('Sample contact').fill('name = bob');
      await preview.getByRole('button', { name: 'Preview' }).click();
      await expect
        .poll(() => preview.locator('blockquote').first().textContent())
        .toBe('Hello Bob, about your basic plan');

      // Started, watched to the end over the live feed, without the page being loaded again.
      const bar = page.getByRole('progressbar', { name: 'Contacts done' });
      await expect.poll(() => page.getByText('Live: updates as attempts finish.').count()).toBe(1);
      expect(await bar.getAttribute('aria-valuenow')).toBe('0');
      await page.evaluate('window.samePage = true');
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect.poll(() => bar.getAttribute('aria-valuenow'), { timeout: 30_000 }).toBe('100');
      const counts = page.locator('.progress-counts');
      await expect.poll(() => counts.textContent()).toContain('Statuscompleted');
      expect(await counts.textContent()).toContain('Completed2');
      expect(await page.evaluate('window.samePage')).toBe(true);
      expect(await page.getByText('Live: updates as attempts finish.').count()).toBe(1);

      // Finished: no move is left.
      // (The buttons follow the campaign, which the page reads again once the feed says it moved.)
      await expect
        .poll(() => Promise.all(['Start', 'Pause', 'Stop'].map((b) => buttonState(page, b))))
        .toEqual([false, false, false]);

      // The executions, one per contact, linked to their calls.
      const executions = page.getByRole('region', { name: 'Executions' });
      await expect.poll(() => executions.getByRole('link', { name: /^Call \d+$/ }).count()).toBe(2);
      const listed = await t.app.inject({
        url: `/api/v1/campaigns/${id}/executions`,
        headers: org.admin.headers,
      });
      const callIds = listed.json().executions.map((e: { call_id: string }) => e.call_id);
      for (const callId of callIds)
        expect(await executions.getByRole('link', { name: `Call ${callId}` }).getAttribute('href')).toBe(
          `/console/calls/${callId}`,
        );
      expect(await executions.getByRole('row', { name: /\+14157779002/ }).textContent()).toContain(
        'completed',
      );
      await picture('campaign');

      // The list shows it with its counts.
      await page.getByRole('link', { name: 'All campaigns' }).click();
      const row = page.getByRole('row', { name: /Spring renewals/ });
      await expect.poll(() => row.textContent()).toContain('completed');
      expect(await row.getByRole('cell').allTextContents()).toEqual(
        expect.arrayContaining(['completed', 'Calls', '2', '2', '0']),
      );
      await picture('campaigns');
    },
    LONG,
  );

  it(
    'schedules and unschedules, enables pause, resume and stop as the status allows, and shows the API refusing a start',
    async () => {
      const org = await f.carrierOrganization({ sim });
      // No contacts: the API refuses the start, and the page says why.
      const empty = await apiCampaign(org, { name: 'Empty' }, []);
      const page = browser.page();
      page.on('dialog', (dialog) => void dialog.accept());
      await signIn(page, org.admin, `/campaigns/${empty}`);
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('no contacts');

      // Scheduled once: a time in the past is refused at its field; a future one schedules it, and
      // Unschedule takes it back to draft.
      const schedule = page.getByRole('region', { name: 'Schedule' });
      await schedule.getByLabel('Time zone').fill('Europe/Berlin');
      await schedule.getByLabel('Starts at').fill('2020-01-01T09:00');
      await schedule.getByRole('button', { name: 'Save the schedule' }).click();
      expect(await fieldError(page, 'Starts at')).toMatch(/future|past/i);
      await schedule.getByLabel('Starts at').fill(`${new Date().getFullYear() + 1}-03-02T09:30`);
      await schedule.getByRole('button', { name: 'Save the schedule' }).click();
      await expect.poll(() => schedule.getByText(/^Once, next start/).count()).toBe(1);
      expect(await schedule.textContent()).toContain('(Europe/Berlin)');
      const stored = await t.app.inject({
        url: `/api/v1/campaigns/${empty}/schedule`,
        headers: org.admin.headers,
      });
      expect(stored.json()).toMatchObject({ schedule_type: 'scheduled', timezone: 'Europe/Berlin' });
      await schedule.getByRole('button', { name: 'Unschedule (back to draft)' }).click();
      await expect
        .poll(() => schedule.getByText('No schedule: the campaign runs when it is started.').count())
        .toBe(1);

      // A busy line with a long retry delay keeps the campaign running, waiting for its retry.
      sim.setCallOutcome('+14157779101', { status: 'busy' });
      const id = await apiCampaign(org, { max_attempts: 2, retry_delay_minutes: 600 }, ['+14157779101']);
      await page.goto(`${t.baseUrl}/console/campaigns/${id}`);
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      await expect.poll(() => buttonState(page, 'Pause')).toBe(true);
      expect(await buttonState(page, 'Start')).toBe(false);
      expect(await buttonState(page, 'Stop')).toBe(true);

      await page.getByRole('button', { name: 'Pause', exact: true }).click();
      await expect.poll(() => buttonState(page, 'Resume')).toBe(true);
      expect(await buttonState(page, 'Pause')).toBe(false);

      // Stopped elsewhere: the live feed brings the page along, and no move is left.
      const stopped = await t.app.inject({
        method: 'POST',
        url: `/api/v1/campaigns/${id}/stop`,
        headers: org.admin.headers,
      });
      expectStatus(stopped, 200);
      const bar = page.getByRole('progressbar', { name: 'Contacts done' });
      await expect.poll(() => bar.getAttribute('aria-valuenow')).toBe('100');
      await expect.poll(() => buttonState(page, 'Stop')).toBe(false);
      expect(await buttonState(page, 'Start')).toBe(false);
    },
    LONG,
  );

  it(
    "shows another organization's campaign as not found, and fits a phone-sized screen",
    async () => {
      const owner = await f.carrierOrganization({ sim });
      const id = await apiCampaign(owner, {}, ['+14157779201']);
      const stranger = await f.carrierOrganization({ sim });
      const page = browser.page();
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn(page, stranger.admin, `/campaigns/${id}`);
      await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not found/i);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Campaign not found');

      await page.getByRole('button', { name: 'Menu' }).click();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL('**/console/sign-in**');
      await signIn(page, owner.admin, `/campaigns/${id}`);
      await page.getByRole('heading', { level: 1, name: 'Follow-up' }).waitFor();
      for (const path of [`/campaigns/${id}`, '/campaigns']) {
        await page.goto(`${t.baseUrl}/console${path}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        await page.getByText('Loading…').first().waitFor({ state: 'detached' });
        const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
        expect(width, path).toBeLessThanOrEqual(390);
      }
    },
    LONG,
  );
});
