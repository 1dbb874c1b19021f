/**
 * The assistant editor (`/assistants/:id`) in headless Chromium, against a real listening platform
 * with the embeddings simulator as the knowledge vendor: settings changed in three groups (model
 * temperature, voice, idle message), saved, kept after a reload and in the API; a bad temperature
 * refused at its field with the API's words; help and defaults read from the API's document; a vendor
 * key shown masked, kept when untouched, replaced when typed, asked again when the voice vendor
 * changes; a custom tool whose parameters are no JSON Schema refused at its box; a document uploaded,
 * followed to `completed`, and found by the search box; the page on a phone-sized screen; deleting.
 */
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { useBrowser } from './support/browser.js';
import { fieldError, pictureFromTop, signInAt } from './support/console-pages.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { embeddingsRig } from './support/knowledge-embeddings.js';

const rig = embeddingsRig();
const t = useTestPlatform(() => ({ EMBEDDINGS_BASE_URL: rig.url() }), { listen: true });
const browser = useBrowser();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

const LONG = 60_000;
/** Processing runs on the shared machine's job workers: under load it takes a while. */
const PROCESSING = 120_000;
const KEY = 'sk-test-embeddings';

/** An organization whose assistant has an llm_a key (the embeddings key too) and a tts_a key. */
async function assistantWithKeys(): Promise<{ admin: TestUser; id: number }> {
  const admin = await f.user();
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: {
      name: 'Front desk',
      llm_provider: 'llm_a',
      llm_provider_config: { api_key: KEY, model: 'model-a' },
      tts_settings: { provider: 'tts_a', api_key: 'tts-secret-1234' },
    },
  });
  expectStatus(created, 201);
  return { admin, id: created.json().id };
}

async function read(admin: TestUser, id: number) {
  const response = await t.app.inject({ url: `/api/v1/assistants/${id}`, headers: admin.headers });
  expectStatus(response, 200);
  return response.json();
}

async function save(page: Page) {
  await page.getByRole('button', { name: 'Save', exact: true }).click();
}

/** Waits for "Saved."; a refusal shown instead is what the failure says. */
async function saved(page: Page) {
  await expect
    .poll(async () =>
      (await page.getByRole('status').filter({ hasText: 'Saved.' }).count()) === 1
        ? 'Saved.'
        : (await page.locator('.save-bar [role=alert]').allTextContents()).join(' '),
    )
    .toBe('Saved.');
}

/** The help text shown under a labelled field. */
async function helpOf(page: Page, label: string): Promise<string> {
  const ids = (await page.getByLabel(label, { exact: true }).getAttribute('aria-describedby')) ?? '';
  const helpId = ids.split(' ').find((id) => id.endsWith('-help'));
  return (await page.locator(`[id="${helpId}"]`).textContent()) ?? '';
}

describe('assistant editor', () => {
  it(
    'changes settings in three groups, keeps them after a reload, and refuses a bad one at its field',
    async () => {
      const { admin, id } = await assistantWithKeys();
      const page = browser.page();
      await signInAt(t.baseUrl!, page, admin, '/assistants');
      await page.getByRole('link', { name: 'Front desk', exact: true }).click();
      await page.waitForURL(`**/console/assistants/${id}`);

      // Help and defaults come from the API's document (including the create default of idle_timeout).
      const temperature = page.getByLabel('Temperature', { exact: true });
      await expect.poll(() => temperature.inputValue()).toBe('0.7');
      expect(await helpOf(page, 'Temperature')).toMatch(/Default: 0\.7\./);
      expect(await helpOf(page, 'Idle timeout')).toMatch(/Default: 10\./);
      expect(await helpOf(page, 'Interruption threshold')).toContain('Words the caller must say');

      // A temperature the API refuses: its words at the field, nothing stored.
      await temperature.fill('9');
      await save(page);
      expect(await fieldError(page, 'Temperature')).toMatch(/2/);
      expect((await read(admin, id)).llm_settings.temperature).toBe(0.7);

      await temperature.fill('0.3');
      await page.getByLabel('Voice ID', { exact: true }).fill('warm-voice');
      await page.getByLabel('Idle message', { exact: true }).fill('Hello? Still with me?');
      await save(page);
      await saved(page);

      const stored = await read(admin, id);
      expect(stored.llm_settings.temperature).toBe(0.3);
      expect(stored.tts_settings.voice_id).toBe('warm-voice');
      expect(stored.idle_message).toBe('Hello? Still with me?');
      // Untouched settings (and secrets) stayed.
      expect(stored.llm_settings.max_tokens).toBe(1000);
      expect(stored.llm_provider_config.api_key).toMatch(/^\*+/);

      await page.reload();
      await expect.poll(() => page.getByLabel('Temperature', { exact: true }).inputValue()).toBe('0.3');
      expect(await page.getByLabel('Voice ID', { exact: true }).inputValue()).toBe('warm-voice');
      expect(await page.getByLabel('Idle message', { exact: true }).inputValue()).toBe(
        'Hello? Still with me?',
      );
      await pictureFromTop(browser, 'assistant-editor');
    },
    LONG,
  );

  it(
    'shows a secret masked, keeps it untouched, replaces it when typed, and asks again for a new vendor',
    async () => {
      const { admin, id } = await assistantWithKeys();
      const page = browser.page();
      await signInAt(t.baseUrl!, page, admin, `/assistants/${id}`);
      const key = page.getByLabel('Voice API key', { exact: true });
      await expect.poll(() => key.count()).toBe(1);
      expect(await key.inputValue()).toBe('');
      expect(await helpOf(page, 'Voice API key')).toMatch(/Saved: \*+1234/);

      // Another change saved: the key stays as it was.
      await page.getByLabel('Max tokens', { exact: true }).fill('500');
      await save(page);
      await saved(page);
      const kept = await read(admin, id);
      expect(kept.llm_settings.max_tokens).toBe(500);
      expect(kept.tts_settings.api_key).toMatch(/1234$/);

      await key.fill('tts-secret-9876');
      await save(page);
      await saved(page);
      expect((await read(admin, id)).tts_settings.api_key).toMatch(/9876$/);
      await expect.poll(() => helpOf(page, 'Voice API key')).toMatch(/Saved: \*+9876/);

      // A new vendor: the saved key belonged to the old one; the page asks for the new one's.
      await page.getByLabel('Voice provider', { exact: true }).selectOption('tts_b');
      expect(await helpOf(page, 'Voice API key')).toContain('previous provider');
      await key.fill('tts-b-key-5555');
      await save(page);
      await saved(page);
      const moved = await read(admin, id);
      expect(moved.tts_settings.provider).toBe('tts_b');
      expect(moved.tts_settings.api_key).toMatch(/5555$/);
    },
    LONG,
  );

  it(
    'adds a custom tool, refuses parameters that are no JSON Schema at their box, then saves it',
    async () => {
      const { admin, id } = await assistantWithKeys();
      const page = browser.page();
      await signInAt(t.baseUrl!, page, admin, `/assistants/${id}`);
      await page.getByRole('button', { name: 'Add a custom tool' }).click();
      await page.getByLabel('Tool 1 name', { exact: true }).fill('lookup_order');
      await page.getByLabel('Tool 1 description', { exact: true }).fill('Finds an order by its number');
      await page.getByLabel('Tool 1 URL', { exact: true }).fill('https://example.com/orders');
      await page
        .getByLabel('Tool 1 parameters', { exact: true })
        .fill('{"type": "object", "properties": {"number": {"type": "nope"}}}');
      await save(page);
      expect(await fieldError(page, 'Tool 1 parameters')).toContain('JSON Schema');

      await page
        .getByLabel('Tool 1 parameters', { exact: true })
        .fill('{"type": "object", "properties": {"number": {"type": "string"}}}');
      await save(page);
      await saved(page);
      const tools = (await read(admin, id)).tools_settings.custom_tools;
      expect(tools).toMatchObject([
        { name: 'lookup_order', type: 'http', http: { url: 'https://example.com/orders', method: 'POST' } },
      ]);
      expect(tools[0].parameters.properties.number.type).toBe('string');

      await page.getByRole('button', { name: 'Remove lookup_order' }).click();
      await save(page);
      await saved(page);
      expect((await read(admin, id)).tools_settings.custom_tools).toEqual([]);
    },
    LONG,
  );

  it(
    'uploads a document, follows it to completed, and finds it with the search box',
    async () => {
      const { admin, id } = await assistantWithKeys();
      const page = browser.page();
      await signInAt(t.baseUrl!, page, admin, `/assistants/${id}`);
      await page.getByLabel('Document file', { exact: true }).setInputFiles({
        name: 'warranty.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from(
          'Every appliance comes with a two-year warranty. We repair or replace any part that fails within 24 months.',
        ),
      });
      await page.getByLabel('Document name', { exact: true }).fill('Warranty');
      await page.getByRole('button', { name: 'Upload' }).click();
      const row = page.getByRole('row', { name: /Warranty/ });
      await expect
        .poll(() => row.locator('.document-status').textContent(), { timeout: 90_000 })
        .toBe('completed');

      await page.getByLabel('Question', { exact: true }).fill('How long is the warranty?');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const hits = page.locator('.search-hits');
      await expect.poll(() => hits.textContent()).toContain('two-year warranty');
      expect(await hits.textContent()).toContain('Warranty');
      // The embeddings vendor was asked with the assistant's key.
      expect(rig.simulator.requests.at(-1)?.key).toBe(KEY);
      await browser.screenshot('assistant-knowledge', page.locator('#knowledge'));
    },
    PROCESSING,
  );

  it(
    'works on a phone-sized screen, and deletes the assistant after asking',
    async () => {
      const { admin, id } = await assistantWithKeys();
      const page = browser.page();
      await page.setViewportSize({ width: 375, height: 740 });
      page.on('dialog', (dialog) => void dialog.accept());
      await signInAt(t.baseUrl!, page, admin, `/assistants/${id}`);
      const temperature = page.getByLabel('Temperature', { exact: true });
      await expect.poll(() => temperature.inputValue()).toBe('0.7');
      // Nothing wider than the screen: no sideways scrolling.
      const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);
      const box = await temperature.boundingBox();
      expect(box!.x + box!.width).toBeLessThanOrEqual(375);
      expect(await page.getByRole('link', { name: 'Talk' }).getAttribute('href')).toBe(
        `/console/assistants/${id}/talk`,
      );

      await page.getByRole('button', { name: 'Delete this assistant' }).click();
      await page.waitForURL('**/console/assistants');
      const gone = await t.app.inject({ url: `/api/v1/assistants/${id}`, headers: admin.headers });
      expect(gone.statusCode).toBe(404);
    },
    LONG,
  );
});
