/**
 * The console's numbers, SMS, compliance and settings pages in headless Chromium, against a real
 * listening platform and the carrier_a simulator: a number added and routed to an assistant (and a
 * bad one refused at its field), deleted; an SMS sent and followed to `delivered`, and a compliance
 * refusal shown in words; a compliance submission (with a sample message refused at its box), and a
 * new tab asked for the password before it sees compliance; a vendor key saved, shown masked, and
 * the readiness checklist changed by it; a carrier account checked; the pages on a phone-sized screen.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { useBrowser } from './support/browser.js';
import { fieldError, pictureFromTop, signInAt } from './support/console-pages.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { useTestPlatform, waitFor } from './support/harness.js';
import { startWebhookReceiver } from './support/webhook-receiver.js';

const sim = new CarrierASimulator();
beforeAll(() => sim.start());
// Registered before the platform's: runs after it closed (after-hooks run in reverse order).
afterAll(() => sim.stop());
const t = useTestPlatform(
  // Test events go to a receiver on loopback, also when the suite runs on a database server.
  () => ({ CARRIER_A_BASE_URL: sim.baseUrl, ALLOW_PRIVATE_TARGETS: 'true' }),
  { listen: true },
);
const browser = useBrowser();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

const LONG = 60_000;

const picture = (name: string) => pictureFromTop(browser, name);
const signIn = (page: Page, user: TestUser, path: string) => signInAt(t.baseUrl!, page, user, path);

describe('numbers', () => {
  it(
    'adds a number routed to an assistant, refuses a bad one at its field, and deletes one',
    async () => {
      const org = await f.carrierOrganization({ sim, number: false, assistantName: 'Front desk' });
      const page = browser.page();
      page.on('dialog', (dialog) => void dialog.accept());
      await signIn(page, org.admin, '/numbers');
      await expect.poll(() => page.getByText('No numbers yet').count()).toBe(1);

      await page.getByLabel('Phone number', { exact: true }).fill('415 12');
      await page.getByRole('button', { name: 'Add the number' }).click();
      expect(await fieldError(page, 'Phone number')).toMatch(/E\.164|\+|valid/i);

      await page.getByLabel('Phone number', { exact: true }).fill('+1 (415) 999-8801');
      await page.getByLabel('Label').fill('Support line');
      await page.getByLabel('Routed to').selectOption({ label: 'Assistant: Front desk' });
      await page.getByRole('button', { name: 'Add the number' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('+14159998801 is added');
      const row = page.getByRole('row', { name: /\+14159998801/ });
      await expect.poll(() => row.textContent()).toContain('Assistant: Front desk');
      expect(await row.textContent()).toContain('Support line');

      // The API holds what the page showed.
      const listed = await t.app.inject({ url: '/api/v1/phone-numbers', headers: org.admin.headers });
      expect(listed.json()).toMatchObject([
        {
          phone_number: '+14159998801',
          assistant_id: org.assistantId,
          graph_id: null,
          friendly_name: 'Support line',
        },
      ]);
      await picture('numbers');

      // Its page changes the SMS rate; a rate that is no number is refused at the field.
      await page.getByRole('link', { name: '+14159998801' }).click();
      await page.getByLabel('SMS rate (messages per second)').fill('fast');
      await page.getByRole('button', { name: 'Save' }).click();
      expect(await fieldError(page, 'SMS rate (messages per second)')).toContain('number');
      await page.getByLabel('SMS rate (messages per second)').fill('2');
      await page.getByRole('button', { name: 'Save' }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Saved');
      const read = await t.app.inject({
        url: `/api/v1/phone-numbers/${listed.json()[0].id}`,
        headers: org.admin.headers,
      });
      expect(read.json().sms_rate_per_second).toBe(2);

      await page.getByRole('button', { name: 'Delete this number' }).click();
      await page.waitForURL('**/console/numbers');
      await expect.poll(() => page.getByText('No numbers yet').count()).toBe(1);
    },
    LONG,
  );
});

describe('sms', () => {
  it(
    'sends a message, follows it to delivered, and shows a compliance refusal in words',
    async () => {
      const org = await f.carrierOrganization({ sim });
      const page = browser.page();
      await signIn(page, org.admin, '/sms');
      await expect.poll(() => page.getByLabel('From', { exact: true }).inputValue()).toBe(org.number);
      await page.getByLabel('To', { exact: true }).fill('+14155550123');
      await page.getByLabel('Message', { exact: true }).fill('Your order 1234 has shipped.');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.waitForURL(/\/console\/sms\?message=/);
      const status = page.locator('.sms-status');
      await expect.poll(() => status.textContent(), { timeout: 30_000 }).toContain('delivered');
      expect(sim.messages.at(-1)).toMatchObject({ from: org.number, to: '+14155550123' });
      await page.getByRole('button', { name: 'Refresh' }).click();
      await expect.poll(() => page.getByText(/1 message in all/).count()).toBeGreaterThan(0);
      await picture('sms');

      // With compliance enforced, the number (never submitted) is refused, and the page says why.
      const enforce = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: org.admin.headers,
        payload: { settings: { enforce_sms_compliance: true } },
      });
      expectStatus(enforce, 200);
      await page.getByLabel('To', { exact: true }).fill('+14155550123');
      await page.getByLabel('Message', { exact: true }).fill('A second message.');
      await page.getByRole('button', { name: 'Send' }).click();
      const alert = page.getByRole('alert');
      await expect.poll(() => alert.textContent()).toMatch(/compliance/i);
      expect(await page.getByRole('link', { name: 'SMS compliance' }).count()).toBe(1);
    },
    LONG,
  );
});

describe('compliance', () => {
  it(
    'submits a number for review, refusing a short sample at its box; a new tab asks for the password',
    async () => {
      const org = await f.carrierOrganization({ sim });
      const page = browser.page();
      await signIn(page, org.admin, '/compliance');
      await page.getByRole('link', { name: org.number }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Not submitted');

      await page.getByLabel('Use case').selectOption('appointment_reminders');
      await page.getByLabel('Business name').fill('Acme Dental');
      await page
        .getByLabel('What the business does, and why it sends messages')
        .fill('A dental practice reminding patients of their appointments.');
      await page.getByLabel('Sample message 1').fill('Too short');
      await page.getByRole('button', { name: 'Submit for review' }).click();
      expect(await fieldError(page, 'Sample message 1')).toMatch(/10|short|fewer/i);

      await page
        .getByLabel('Sample message 1')
        .fill('Acme Dental: your cleaning is tomorrow at 10:00. Reply STOP to opt out.');
      await page.getByRole('button', { name: 'Submit for review' }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Pending review');
      await expect
        .poll(() => page.getByRole('row', { name: new RegExp(org.number.replace('+', '\\+')) }).textContent())
        .toContain('Pending review');
      await picture('compliance');

      // A new tab shares the session but holds no access token: it asks for the password first.
      const tab = await browser.context().newPage();
      await tab.goto(`${t.baseUrl}/console/compliance`);
      await tab.getByLabel('Password', { exact: true }).fill('not the password');
      await tab.getByRole('button', { name: 'Continue' }).click();
      await expect.poll(() => tab.getByRole('alert').textContent()).toMatch(/password/i);
      // The refused password did not end the session.
      expect(await tab.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
      await tab.getByLabel('Password', { exact: true }).fill(org.admin.password);
      await tab.getByRole('button', { name: 'Continue' }).click();
      await expect.poll(() => tab.getByText('0 approved, 1 pending').count()).toBe(1);
    },
    LONG,
  );
});

describe('settings', () => {
  it(
    'saves a vendor key, shows it masked, and the readiness checklist changes; checks the carrier',
    async () => {
      const org = await f.carrierOrganization({ sim, number: false });
      const page = browser.page();
      await signIn(page, org.admin, '/settings');
      const stt = page.locator('.checklist > li', { hasText: 'Speech-to-text' });
      await expect.poll(() => stt.textContent()).toContain('missing');
      expect(await page.getByText('Not ready yet').count()).toBe(1);

      // The carrier's auth token is shown masked, never in clear.
      const authToken = page.getByLabel('Auth token');
      expect(await authToken.inputValue()).toBe('');
      expect(await page.content()).not.toContain(org.account.auth_token);
      expect(await page.getByText(`Saved: ****${org.account.auth_token.slice(-4)}`).count()).toBe(1);
      await page.getByRole('button', { name: 'Check the saved credentials' }).first().click();
      await expect.poll(() => page.getByText(/✓ Accepted/).count()).toBe(1);

      const key = 'stt-key-0123456789-wxyz';
      await page.getByLabel('Speech-to-text A (stt_a)').fill(key);
      await page.getByRole('button', { name: 'Save the keys' }).click();
      await expect.poll(() => page.getByText('Saved: ****wxyz').count()).toBe(1);
      expect(await page.getByLabel('Speech-to-text A (stt_a)').inputValue()).toBe('');
      await expect.poll(() => stt.textContent()).toContain('ready');
      expect(await page.content()).not.toContain(key);
      await picture('settings');

      // Saving again without typing keeps the stored key (the masked value goes back unchanged).
      await page.getByRole('button', { name: 'Save Carrier A' }).click();
      await expect
        .poll(() => page.getByRole('status').filter({ hasText: 'Saved.' }).count())
        .toBeGreaterThan(0);
      const sent = await t.app.inject({
        method: 'POST',
        url: '/api/v1/organization/carrier_a/validate',
        headers: org.admin.headers,
      });
      expect(sent.json().valid).toBe(true);
    },
    LONG,
  );

  it(
    'fits a phone-sized screen: the navigation folds into a menu, nothing scrolls sideways',
    async () => {
      const org = await f.carrierOrganization({ sim });
      const page = browser.page();
      await page.setViewportSize({ width: 390, height: 844 });
      await signIn(page, org.admin, '/numbers');
      await expect.poll(() => page.getByRole('row', { name: /\+1415999/ }).count()).toBe(1);
      const sms = page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'SMS' });
      expect(await sms.isVisible()).toBe(false);
      await page.getByRole('button', { name: 'Menu' }).click();
      await sms.click();
      await page.waitForURL('**/console/sms');
      for (const path of ['/sms', '/settings', '/numbers']) {
        await page.goto(`${t.baseUrl}/console${path}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
        expect(width, path).toBeLessThanOrEqual(390);
      }
    },
    LONG,
  );
});

describe('webhooks and roles', () => {
  it(
    'shows and rotates the webhook secret, sends a test event and redelivers it',
    async () => {
      const org = await f.carrierOrganization({ sim, number: false });
      const receiver = await startWebhookReceiver();
      try {
        const page = browser.page();
        page.on('dialog', (dialog) => void dialog.accept());
        await signIn(page, org.admin, '/settings');
        await page.getByRole('button', { name: 'Show the secret' }).click();
        const secret = page.locator('code.secret');
        await expect.poll(() => secret.textContent()).toMatch(/^whsec_/);
        const first = await secret.textContent();
        await page.getByRole('button', { name: 'Rotate' }).click();
        await expect.poll(() => page.getByText('A new secret is in use').count()).toBe(1);
        const rotated = await secret.textContent();
        expect(rotated).not.toBe(first);
        const stored = await t.app.inject({
          url: '/api/v1/organization/webhook-secret',
          headers: org.admin.headers,
        });
        expect(stored.json().webhook_secret).toBe(rotated);

        await page.getByLabel('Endpoint URL').fill('not a url');
        await page.getByRole('button', { name: 'Send a test event' }).click();
        expect(await fieldError(page, 'Endpoint URL')).not.toBe('');
        await page.getByLabel('Endpoint URL').fill(receiver.url);
        await page.getByRole('button', { name: 'Send a test event' }).click();
        await expect.poll(() => page.getByText('A test event is on its way').count()).toBe(1);
        await waitFor(() => receiver.received.length === 1, 20_000);
        const delivery = await waitFor(async () => {
          const list = await t.app.inject({
            url: '/api/v1/organization/webhook-deliveries',
            headers: org.admin.headers,
          });
          const item = list.json().items[0];
          return item?.status === 'delivered' ? item : undefined;
        }, 20_000);
        await page.getByLabel('Status', { exact: true }).selectOption('delivered');
        const redeliver = page.getByRole('button', { name: `Redeliver webhook.test ${delivery.id}` });
        await redeliver.click();
        await waitFor(() => receiver.received.length === 2, 20_000);
        expect(receiver.received[1]!.body).toBe(receiver.received[0]!.body);
      } finally {
        await receiver.close();
      }
    },
    LONG,
  );

  it(
    'shows a member the settings without forms, secrets masked, and no webhook secret',
    async () => {
      const org = await f.carrierOrganization({ sim, number: false });
      const member = await f.member(org.admin.organizationId, 'user');
      const page = browser.page();
      await signIn(page, member, '/settings');
      await expect.poll(() => page.getByText('Only admins change these settings').count()).toBe(1);
      await expect.poll(() => page.getByText(`****${org.account.auth_token.slice(-4)}`).count()).toBe(1);
      expect(await page.content()).not.toContain(org.account.auth_token);
      expect(await page.getByRole('button', { name: 'Save Carrier A' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Show the secret' }).count()).toBe(0);
      await page.getByRole('heading', { name: 'Webhook deliveries' }).waitFor();
    },
    LONG,
  );
});
