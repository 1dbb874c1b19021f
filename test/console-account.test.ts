/**
 * The console's account pages in real headless Chromium (docs/console.md "Signing in",
 * "Organization, API keys, billing"): a new user registers, confirms the address through the mail's
 * link, finds the organization, makes an API key that is shown once and works, revokes it, reads the
 * wallet, signs out and back in (a wrong password shown as such), and an invitation is accepted from
 * its link. Also the narrow layout's menu, and a 401 (session ended elsewhere) sending the page back
 * to the sign-in.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useBrowser } from './support/browser.js';
import { uniqueEmail } from './support/factories.js';
import { useTestPlatform, verificationToken, waitFor } from './support/harness.js';

const t = useTestPlatform({}, { listen: true });
const browser = useBrowser();
const PASSWORD = 'a long password';

const base = () => `${t.baseUrl}/console`;

async function register(page: Page, email: string, organization = 'Analytical Engines'): Promise<void> {
  await page.goto(`${base()}/register`);
  await page.getByLabel('First name').fill('Ada');
  await page.getByLabel('Last name').fill('Lovelace');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByLabel('Organization name').fill(organization);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { name: 'Confirm your email' }).waitFor();
}

async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base()}/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describe('the console, signed out and in', () => {
  it('registers, confirms the email from the link, and shows the organization', async () => {
    const page = browser.page();
    const email = uniqueEmail('console');
    await register(page, email);
    await browser.screenshot('verify');
    // The mail's link opens the console's page, which confirms the address.
    const token = await verificationToken(t, email);
    const link = t
      .mails()
      .find((m) => m.to === email)!
      .body.match(/^(http\S+\/console\/verify\?token=\S+)$/m)?.[1];
    expect(link).toBe(`${t.baseUrl}/console/verify?token=${token}`);
    await page.goto(link!);
    await page.getByText('Your email address is confirmed.').waitFor();
    await page.getByRole('link', { name: 'Go to the console' }).click();
    // A new user starts at the overview, which has no calls yet and points to the assistants; the
    // organization is one link away.
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.getByText('No calls in these days yet').waitFor();
    await page.getByRole('link', { name: 'Organization' }).click();
    await page.getByRole('heading', { name: 'Organization', level: 1 }).waitFor();
    await expect
      .poll(() => page.getByRole('region', { name: 'Details' }).getByLabel('Name').inputValue())
      .toBe('Analytical Engines');
    await page.getByRole('cell', { name: email }).waitFor();
    expect(await page.title()).toBe('Organization · Switchboard');
    await browser.screenshot('organization');
  });

  it('shows a wrong password as such, then signs in and returns to the page asked for', async () => {
    const page = browser.page();
    const email = uniqueEmail('console');
    await register(page, email);
    await page.context().clearCookies();
    await page.goto(`${base()}/billing`);
    await page.waitForURL(/\/console\/sign-in\?next=%2Fbilling/);
    await browser.screenshot('sign-in');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /invalid|incorrect/i })
      .waitFor();
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Billing' }).waitFor();
    // The wallet's balance, as the API has it.
    const wallet = (await page.evaluate(async () => (await fetch('/v1/billing/wallet')).json())) as {
      balance: number;
    };
    const shown = (await page.locator('.figure-value').textContent()) ?? '';
    expect(shown.replace(/[^0-9.]/g, '')).toBe(Number(wallet.balance).toFixed(2));
    await page.getByRole('cell', { name: /trial credit/i }).waitFor();
    await browser.screenshot('billing');
  });

  it('makes an API key shown once, which works, and revokes it', async () => {
    const page = browser.page();
    const email = uniqueEmail('console');
    await register(page, email);
    // Keys need a confirmed address: the page says why it refuses first.
    await page.goto(`${base()}/api-keys`);
    await page.getByLabel('Name', { exact: true }).fill('server');
    await page.getByRole('button', { name: 'Create the key' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /verif|confirm/i })
      .waitFor();

    await page.goto(`${base()}/verify?token=${await verificationToken(t, email)}`);
    await page.getByText('Your email address is confirmed.').waitFor();
    await page.goto(`${base()}/api-keys`);
    await page.getByLabel('Name', { exact: true }).fill('server');
    await page.getByLabel('calls').selectOption('read_write');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const secret = (await page.locator('code.secret').textContent()) ?? '';
    expect(secret).toMatch(/^sk_/);
    await browser.screenshot('api-keys');
    const works = await fetch(`${t.baseUrl}/api/v1/calls`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(works.status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    // Shown once: the list has its prefix only.
    expect(await page.locator('body').textContent()).not.toContain(secret);
    await page.getByRole('cell', { name: 'calls: write' }).waitFor();

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke server' }).click();
    await page.getByText('No keys yet.').waitFor();
    const revoked = await fetch(`${t.baseUrl}/api/v1/calls`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(revoked.status).toBe(401);
  });

  it('creates an assistant from the list and opens its Talk page', async () => {
    const page = browser.page();
    await register(page, uniqueEmail('console'));
    await page.goto(`${base()}/assistants`);
    await page.getByText('No assistant yet').waitFor();
    const form = page.getByRole('form', { name: 'New assistant' });
    await form.getByRole('button', { name: 'Create the assistant' }).click();
    // The API's refusal, at the field it concerns.
    await form
      .locator('.field-error')
      .filter({ hasText: /character/i })
      .waitFor();
    await form.getByLabel('Name').fill('Receptionist');
    await form.getByRole('button', { name: 'Create the assistant' }).click();
    await page.getByRole('heading', { name: 'Talk to Receptionist' }).waitFor();
    await page.goto(`${base()}/assistants`);
    await page.getByRole('cell', { name: 'Receptionist', exact: true }).waitFor();
    await browser.screenshot('assistants');
  });

  it('shows a validation error at its field', async () => {
    const page = browser.page();
    await page.goto(`${base()}/register`);
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByLabel('Email').fill(uniqueEmail('console'));
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    const password = page.getByLabel('Password');
    await expect.poll(() => password.getAttribute('aria-invalid')).toBe('true');
    const described = (await password.getAttribute('aria-describedby'))!.split(' ').at(-1)!;
    expect(await page.locator(`[id="${described}"]`).textContent()).toMatch(/8 characters/);
  });

  it("accepts an invitation from its link, into the inviter's organization", async () => {
    const page = browser.page();
    const admin = uniqueEmail('console');
    await register(page, admin, 'Difference Engines');
    await page.goto(`${base()}/verify?token=${await verificationToken(t, admin)}`);
    await page.getByText('Your email address is confirmed.').waitFor();
    await page.goto(`${base()}/organization`);
    const invitee = uniqueEmail('invitee');
    const form = page.getByRole('form', { name: 'Invite a member' });
    await form.getByLabel('Email').fill(invitee);
    await form.getByLabel('First name').fill('Grace');
    await form.getByLabel('Last name').fill('Hopper');
    await form.getByRole('button', { name: 'Send the invitation' }).click();
    await page.getByText(`An invitation is on its way to ${invitee}`).waitFor();
    const mail = await waitFor(() => t.mails().find((m) => m.to === invitee));
    const link = mail.body.match(/^(http\S+\/console\/invitation\?token=\S+)$/m)?.[1];
    expect(link).toBeDefined();

    await page.context().clearCookies();
    await page.goto(link!);
    await page.getByText('Difference Engines').waitFor();
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Confirm the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Accept the invitation' }).click();
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    await page.getByText('Grace (user)').waitFor();
  });

  it('folds the navigation into a menu on a phone, and a session ended elsewhere signs the page out', async () => {
    const page = browser.page();
    await page.setViewportSize({ width: 390, height: 800 });
    const email = uniqueEmail('console');
    await register(page, email);
    await page.goto(`${base()}/organization`);
    const billing = page.getByRole('link', { name: 'Billing' });
    expect(await billing.isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    await billing.click();
    await page.getByRole('heading', { name: 'Billing' }).waitFor();
    expect(await billing.isVisible()).toBe(false);
    await browser.screenshot('narrow');

    // Signing out in another tab ends this tab's session: its next request sends it to the sign-in.
    const csrf = String(await page.evaluate("localStorage.getItem('switchboard.csrf')"));
    await page.evaluate(
      (token) => fetch('/api/v1/auth/logout', { method: 'POST', headers: { 'x-csrf-token': token } }),
      csrf,
    );
    await page.getByRole('button', { name: 'Menu' }).click();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(/\/console\/sign-in/);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signIn(page, email);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
  });
});
