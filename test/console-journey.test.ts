/**
 * The console's first journey (issue 22), in real headless Chromium, the way a newcomer takes it:
 * register, confirm the address from the mail's link, save the vendor keys in Settings, create an
 * assistant and talk to it — Chromium's fake microphone plays the committed speech fixtures, the Talk
 * page streams them over a web call into the platform's runtime on the simulators (stt_a scripted,
 * the language model scripted, tts_a), and the page shows the caller's words, the assistant's spoken
 * reply and each turn's latency as they happen — then find the call in the calls list and open it:
 * the transcript and the latency waterfall of both turns. The call record holds the same conversation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { speechWav, useBrowser } from './support/browser.js';
import { expectStatus, Factories, uniqueEmail } from './support/factories.js';
import { verificationToken, waitFor } from './support/harness.js';
import { BOOK, startVoiceRig, type VoiceRig } from './support/voice-rig.js';

const PASSWORD = 'a long password';
const THREE = "Yes, three o'clock works for me.";
const FIRST_REPLY = 'Sure, which time suits you?';
const SECOND_REPLY = 'Booked for three. Anything else?';

let rig: VoiceRig;
let f: Factories;
beforeAll(async () => {
  rig = await startVoiceRig();
  f = new Factories(rig.t);
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

// The caller waits out the greeting, asks to book, waits for the answer, and agrees to three.
const browser = useBrowser((dir) => ({
  microphoneWav: speechWav(dir, [
    { silenceMs: 4000 },
    'book-appointment',
    { silenceMs: 5000 },
    'three-oclock',
    { silenceMs: 8000 },
  ]).path,
}));

describe('the first journey', () => {
  it('signs up, saves the vendor keys, creates an assistant, talks to it, and finds the call with its waterfall', async () => {
    const keys = { llm: 'journey-llm', stt: 'journey-stt', tts: 'journey-tts' };
    rig.llm.addKey(keys.llm);
    rig.stt.addKey(keys.stt);
    rig.voices.tts_a!.addKey(keys.tts);
    rig.stt.setScript(keys.stt, [BOOK, THREE]);
    rig.llm.setScript(keys.llm, [{ text: FIRST_REPLY }, { text: SECOND_REPLY }]);
    const page = browser.page();
    const base = `${rig.t.baseUrl}/console`;
    const email = uniqueEmail('journey');

    // Register, and confirm the address from the mail's link.
    await page.goto(`${base}/`);
    await page.getByRole('link', { name: /create an account/i }).click();
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Organization name').fill('Analytical Engines');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Confirm your email' }).waitFor();
    const token = await verificationToken(rig.t, email);
    await page.goto(`${base}/verify?token=${token}`);
    await page.getByText('Your email address is confirmed.').waitFor();
    await page.getByRole('link', { name: 'Go to the console' }).click();
    // The console opens at the overview, empty yet.
    await page.getByText('No calls in these days yet').waitFor();

    // The vendor keys, in Settings.
    await page.getByRole('link', { name: 'Settings' }).click();
    const vendorKeys = page.getByRole('form', { name: 'Vendor API keys' });
    await vendorKeys.getByLabel('Language model A (llm_a)').fill(keys.llm);
    await vendorKeys.getByLabel('Speech-to-text A (stt_a)').fill(keys.stt);
    await vendorKeys.getByLabel('Text-to-speech A (tts_a)').fill(keys.tts);
    await vendorKeys.getByRole('button', { name: 'Save the keys' }).click();
    await vendorKeys.getByRole('status').getByText('Saved.').waitFor();

    // An assistant, created from the list, opens its Talk page.
    await page.getByRole('link', { name: 'Assistants' }).click();
    await page.getByRole('form', { name: 'New assistant' }).getByLabel('Name').fill('Front desk');
    await page.getByRole('button', { name: 'Create the assistant' }).click();
    await page.waitForURL(/\/console\/assistants\/\d+\/talk$/);
    await page.getByRole('heading', { name: /^Talk to / }).waitFor();

    await page.getByRole('button', { name: 'Start talking' }).click();
    const transcript = page.getByRole('list', { name: 'Transcript' });
    // The greeting is spoken (the page says so while its audio plays), then the caller is heard.
    await page.getByText('The assistant is speaking').waitFor({ timeout: 20_000 });
    await transcript.getByText(BOOK).waitFor({ timeout: 30_000 });
    await transcript.getByText(FIRST_REPLY).waitFor({ timeout: 20_000 });
    await transcript.getByText(THREE).waitFor({ timeout: 30_000 });
    await transcript.getByText(SECOND_REPLY).waitFor({ timeout: 20_000 });
    // Each answered turn's latency, as it completed.
    const latencies = page.locator('table.turn-latencies tbody tr');
    await expect.poll(() => latencies.count(), { timeout: 10_000 }).toBe(2);
    expect(await latencies.first().textContent()).toMatch(/\d+ ms/);
    await browser.screenshot('talk');

    await page.getByRole('button', { name: 'Hang up' }).click();
    await page.getByText('You hung up.').waitFor({ timeout: 15_000 });
    // The microphone is given back once the call is over.
    expect(await page.evaluate('document.querySelector("meter") === null')).toBe(true);
    const link = page.getByRole('link', { name: 'Open the call record' });
    const callId = Number((await link.getAttribute('href'))?.split('/').pop());

    // The call record holds what the page showed: both speakers, both answered turns.
    const user = await f.login({ email, password: PASSWORD });
    const call = await waitFor(async () => {
      const response = await rig.t.app.inject({
        method: 'GET',
        url: `/api/v1/calls/${callId}`,
        headers: user.headers,
      });
      expectStatus(response, 200);
      const body = response.json();
      return body.status === 'completed' ? body : undefined;
    }, 20_000);
    expect(call.call_meta.web).toEqual({ user_id: user.id });
    const turns = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${callId}/turns`,
      headers: user.headers,
    });
    const replies = (
      turns.json() as Array<{ kind: string; user_text: string; assistant_text: string }>
    ).filter((turn) => turn.kind === 'reply');
    expect(replies.map((turn) => [turn.user_text, turn.assistant_text])).toEqual([
      [BOOK, FIRST_REPLY],
      [THREE, SECOND_REPLY],
    ]);

    // Recorded, both sides, like a phone call.
    await waitFor(async () => {
      const response = await rig.t.app.inject({
        method: 'GET',
        url: `/api/v1/calls/${callId}`,
        headers: user.headers,
      });
      return response.json().recording?.status === 'completed';
    }, 20_000);

    // The call is in the calls list, and its page has the conversation, the recording's player and
    // each turn's waterfall.
    await page.getByRole('link', { name: 'Calls', exact: true }).click();
    const row = page.getByRole('table', { name: 'Calls' }).getByRole('row', { name: /Web call/ });
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('completed');
    await row.getByRole('link').first().click();
    await page.waitForURL(new RegExp(`/console/calls/${callId}$`));
    const record = page.getByRole('list', { name: 'Transcript' });
    await record.getByText(BOOK).waitFor();
    await record.getByText(SECOND_REPLY).waitFor();
    await page.getByRole('region', { name: 'Recording' }).locator('audio[controls]').waitFor();
    await expect.poll(() => page.locator('.waterfall-turn').count()).toBe(turns.json().length);
    for (const [position, turn] of (turns.json() as Array<{ position: number; kind: string }>).entries()) {
      if (turn.kind !== 'reply') continue;
      const bars = page.getByRole('img', { name: new RegExp(`^Turn ${turn.position}:`) });
      expect(await bars.getAttribute('aria-label'), `turn ${position}`).toMatch(/End of speech \d+ ms/);
    }

    // A real-time conversation of about 25 s, plus the sign-up and the pages around it.
  }, 120_000);
});
