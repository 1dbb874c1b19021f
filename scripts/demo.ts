/**
 * `npm run demo`: hear the platform talk, in one command and with no set-up. In this one process it
 * starts the simulators of carrier_a, stt_a, the language model and tts_a on free ports, and the
 * platform itself on embedded PostgreSQL in a temporary DATA_DIR, listening on a free port that
 * PUBLIC_URL names so the simulated carrier reaches its webhooks and media stream. Then, as a user
 * would, over the public HTTP API: it registers an account (verified with the operator's function,
 * as `switchboard users verify` does), stores the carrier and vendor keys, creates an assistant and a
 * number, and places a call to a phone that runs the demo caller (sim/demo-caller.ts). It prints the
 * conversation as the platform records it, then each turn's latency breakdown, stops everything,
 * removes the directory, and exits 0 — or 1 with what went wrong.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { type Database, openDatabase } from '../src/db/client.js';
import { runMigrations } from '../src/db/migrate.js';
import { markEmailVerified } from '../src/domains/identity/operator.js';
import { loggerOptions } from '../src/http/logging.js';
import { randomToken } from '../src/lib/crypto.js';
import { freePort } from '../src/lib/net.js';
import { createPlatform, type Platform } from '../src/platform.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { demoCaller, demoTranscript } from '../src/sim/demo-caller.js';
import { type LlmRecordedRequest, type LlmReply, LlmSimulator } from '../src/sim/llm.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { type Segment, segmentLine, type TurnFigures, turnsTable } from './demo-report.js';

/** The whole demo, start to stop, takes well under this; past it something is stuck. */
const DEADLINE_MS = 120_000;
/** How often the call's transcript is read while it is live. */
const POLL_MS = 250;

const CALLER_NUMBER = '+14155550123';
const ASSISTANT_NUMBER = '+14155550100';
const CARRIER_ACCOUNT = { account_sid: 'AC00000000000000000000000000000001', auth_token: randomToken(16) };
const KEYS = { llm_a: randomToken(12), stt_a: randomToken(12), tts_a: randomToken(12) };

const ASSISTANT = {
  name: 'Demo front desk',
  llm_settings: {
    system_prompt: 'You are the front desk of a dental clinic. Book appointments; be brief and kind.',
    welcome_message: 'Hello, Bright Smile Dental, how can I help you?',
  },
};

/**
 * What the simulated language model answers, by what the caller last said: the demo caller's four
 * utterances (the first answer long enough for the caller to cut in a second into it). Chosen by the
 * words, not in order, because a turn the platform starts and then drops (the caller paused
 * mid-sentence and went on) asks the model too.
 */
const REPLIES: Array<[RegExp, string]> = [
  [
    /appointment/i,
    'Of course. Tomorrow we have nine, eleven, two, or three in the afternoon. Which suits you?',
  ],
  [/different question/i, 'Sorry, go ahead. Or shall I book you at three?'],
  [/three o.clock/i, 'Done: tomorrow at three. Anything else?'],
  [/goodbye/i, 'Thank you for calling. Goodbye!'],
];
const NOT_UNDERSTOOD = 'Sorry, could you say that again?';

function reply(request: LlmRecordedRequest): LlmReply {
  const said = request.messages.findLast((message) => message.role === 'user')?.content;
  const text = typeof said === 'string' ? said : '';
  return { text: REPLIES.find(([words]) => words.test(text))?.[1] ?? NOT_UNDERSTOOD };
}

class DemoFailure extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (text = '') => process.stdout.write(`${text}\n`);

/** The platform's log lines, kept to be shown when the demo fails (they would drown the output). */
const logLines: string[] = [];
const logger = pino(
  loggerOptions('info') as object,
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      if (logLines.length > 40) logLines.shift();
      done();
    },
  }),
);

const carrier = new CarrierASimulator();
const stt = new SttASimulator();
const llm = new LlmSimulator();
const tts = new TtsASimulator();
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-demo-'));
let database: Database | undefined;
let platform: Platform | undefined;

async function startSimulators() {
  carrier.addAccount(CARRIER_ACCOUNT);
  carrier.setPhone(CALLER_NUMBER, demoCaller);
  stt.addKey(KEYS.stt_a);
  stt.setScript(KEYS.stt_a, demoTranscript());
  llm.addKey(KEYS.llm_a);
  llm.respond(reply);
  // A human pace, as `npm run sim` has it: a third of a second to think, 30 tokens a second.
  llm.pacing.ttftMs = 300;
  llm.pacing.tokensPerSecond = 30;
  tts.addKey(KEYS.tts_a);
  const [carrierUrl, sttUrl, llmUrl, ttsUrl] = await Promise.all([
    carrier.start(),
    stt.start(),
    llm.start(),
    tts.start(),
  ]);
  return { carrierUrl, sttUrl, llmUrl, ttsUrl };
}

/** Starts the platform as `npm start` does, on embedded PostgreSQL in `dataDir`; answers its address. */
async function startPlatform(urls: Awaited<ReturnType<typeof startSimulators>>): Promise<string> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  // Only what is given here: a developer's .env or environment (DATABASE_URL…) plays no part.
  const config = loadConfig({
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: baseUrl,
    DATA_DIR: dataDir,
    SECRET_KEY: randomToken(48),
    CARRIER_A_BASE_URL: urls.carrierUrl,
    STT_BASE_URL: urls.sttUrl,
    LLM_A_BASE_URL: urls.llmUrl,
    TTS_A_BASE_URL: urls.ttsUrl,
  });
  database = await openDatabase({ kind: 'embedded', dataDir: config.dataDir });
  await runMigrations(database);
  platform = await createPlatform({ config, secretKey: config.secretKey!, database, logger });
  await platform.app.listen({ host: config.host, port: config.port });
  await platform.startWorkers();
  return baseUrl;
}

/** The public API of the platform at `baseUrl`, as the user signed in with `token` calls it. */
function apiClient(baseUrl: string) {
  let token = '';
  return {
    signIn(accessToken: string) {
      token = accessToken;
    },
    async call<T>(method: string, url: string, body?: unknown, expected = 200): Promise<T> {
      const response = await fetch(`${baseUrl}${url}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (response.status !== expected)
        throw new DemoFailure(`${method} ${url} answered ${response.status}: ${text}`);
      return JSON.parse(text) as T;
    },
  };
}

type Api = ReturnType<typeof apiClient>;

/** An account, verified; its organization with the simulators' keys; an assistant and its number. */
async function setUpOrganization(api: Api): Promise<void> {
  const registered = await api.call<{ user: { id: number }; access_token: string }>(
    'POST',
    '/api/v1/auth/register',
    {
      email: 'demo@example.com',
      password: randomToken(16),
      first_name: 'Demo',
      last_name: 'User',
      organization_name: 'Bright Smile Dental',
    },
    201,
  );
  // Before the first signed-in request: no cached principal holds the unverified state.
  await markEmailVerified(database!.db, registered.user.id);
  api.signIn(registered.access_token);
  await api.call('PUT', '/api/v1/organization', {
    carrier_a: CARRIER_ACCOUNT,
    api_keys: Object.fromEntries(Object.entries(KEYS).map(([vendor, key]) => [vendor, { api_key: key }])),
  });
  const assistant = await api.call<{ id: number }>('POST', '/api/v1/assistants', ASSISTANT, 201);
  await api.call(
    'POST',
    '/api/v1/phone-numbers',
    { phone_number: ASSISTANT_NUMBER, provider: 'carrier_a', assistant_id: assistant.id },
    201,
  );
}

/**
 * Places the call and follows it: each transcript segment is printed as it is recorded, until the
 * call is over and its turns stop changing (the session writes its records as it goes). Answers the
 * final transcript and turns.
 */
async function followCall(api: Api, deadline: number): Promise<{ turns: TurnFigures[] }> {
  const { call_id: callId } = await api.call<{ call_id: number }>('POST', '/calls/initiate', {
    from_phone_number: ASSISTANT_NUMBER,
    to_phone_number: CALLER_NUMBER,
  });
  say(`Calling ${CALLER_NUMBER} (call ${callId}); the simulated caller answers…\n`);
  let printed = 0;
  let lastTurns = '';
  for (;;) {
    const transcript = await api.call<Segment[]>('GET', `/api/v1/calls/${callId}/transcript`);
    for (const segment of transcript.slice(printed)) say(segmentLine(segment));
    printed = Math.max(printed, transcript.length);
    const call = await api.call<{ status: string }>('GET', `/api/v1/calls/${callId}`);
    const turns = await api.call<TurnFigures[]>('GET', `/api/v1/calls/${callId}/turns`);
    const now = JSON.stringify(turns);
    if (call.status === 'completed' && now === lastTurns && printed > 0) return { turns };
    if (['failed', 'busy', 'no-answer', 'canceled'].includes(call.status))
      throw new DemoFailure(`the call ended with status "${call.status}"`);
    if (Date.now() > deadline)
      throw new DemoFailure(`the call did not finish in time (status "${call.status}")`);
    lastTurns = now;
    await sleep(POLL_MS);
  }
}

async function stopEverything(): Promise<void> {
  await platform?.stop().catch(() => {});
  await Promise.all([carrier.stop(), stt.stop(), llm.stop(), tts.stop()]).catch(() => {});
  rmSync(dataDir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const started = Date.now();
  const deadline = started + DEADLINE_MS;
  say('Starting the simulated carrier and voice vendors, and the platform on a temporary database…');
  const urls = await startSimulators();
  const baseUrl = await startPlatform(urls);
  const api = apiClient(baseUrl);
  await setUpOrganization(api);
  say(`Platform on ${baseUrl}: an organization with an assistant on ${ASSISTANT_NUMBER} is ready.`);
  const { turns } = await followCall(api, deadline);
  const phoneErrors = [...carrier.phoneCalls.values()].flatMap((call) => call.phone.errors);
  if (turns.length === 0) throw new DemoFailure('the call recorded no turns');
  say('\nTurns (latency breakdown from GET /api/v1/calls/{id}/turns):\n');
  say(turnsTable(turns));
  if (phoneErrors.length > 0) say(`\nThe simulated phone noticed: ${phoneErrors.join('; ')}`);
  say(`\nDone in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  say(
    'To talk to your own running platform the same way: `npm run sim` in one terminal, `npm start` in ' +
      'another with the variables it prints, then place a call (docs/voice.md).',
  );
}

// Output piped into a reader that stops early (`npm run demo | head`): the call and the clean-up go on.
process.stdout.on('error', () => {});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stopEverything().then(() => process.exit(130));
  });
}

try {
  await main();
  await stopEverything();
  process.exit(0);
} catch (error) {
  const reason = error instanceof DemoFailure ? error.message : String((error as Error)?.stack ?? error);
  process.stderr.write(`\nThe demo failed: ${reason}\n`);
  if (logLines.length > 0) process.stderr.write(`\nThe platform's last log lines:\n${logLines.join('')}`);
  await stopEverything();
  process.exit(1);
}
