/**
 * What console browser tests do on many pages: sign in through the sign-in page, read the error
 * shown at a field, and take a documentation picture from the top of the page.
 */
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { BrowserHarness } from './browser.js';
import type { TestUser } from './factories.js';

/** Signs in through the sign-in page (the tab gets its access token there) and opens `path`. */
export async function signInAt(baseUrl: string, page: Page, user: TestUser, path: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-in?next=${encodeURIComponent(path)}`);
  await page.getByLabel('Email', { exact: true }).fill(user.email);
  await page.getByLabel('Password', { exact: true }).fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`**/console${path.split('?')[0]}**`);
}

/** The error shown at a labelled field (the one its aria-describedby names). */
export async function fieldError(page: Page, label: string): Promise<string> {
  const field = page.getByLabel(label, { exact: true });
  await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true');
  const ids = (await field.getAttribute('aria-describedby')) ?? '';
  const errorId = ids.split(' ').find((id) => id.endsWith('-error'));
  return (await page.locator(`[id="${errorId}"]`).textContent()) ?? '';
}

/** A documentation picture from the top of the page (the header is sticky: scrolled, it lands mid-picture). */
export async function pictureFromTop(browser: BrowserHarness, name: string): Promise<void> {
  await browser.page().evaluate('scrollTo(0, 0)');
  await browser.screenshot(name);
}
