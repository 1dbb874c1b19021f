/**
 * Runs the simulators for local development (`npm run sim`): the three carriers, the cloud function
 * API, the voice vendors (speech-to-text stt_a, the language model in both dialects, text-to-speech
 * tts_a, tts_b, tts_c and tts_d) and knowledge bases' embeddings API, each with one demo account, and
 * prints what to configure: the base URLs for the platform's environment, the credentials and keys to
 * store in your organization, and the cloud credentials to list functions with. A call placed through
 * any carrier is answered by a simulated phone that holds the demo conversation (sim/demo-caller.ts)
 * with the assistant over that carrier's media stream. Messages are delivered. Signed webhooks
 * and the media stream go to the URLs the platform gives, so start the platform with PUBLIC_URL
 * reachable from here (the default is).
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:net';
import type { CarrierId } from '../providers/ids.js';
import { CarrierASimulator } from './carrier-a.js';
import { CarrierBSimulator } from './carrier-b.js';
import { CarrierCSimulator } from './carrier-c.js';
import { DEMO_UTTERANCES, demoCaller, demoTranscript } from './demo-caller.js';
import { EmbeddingsSimulator } from './embeddings.js';
import { LambdaSimulator } from './lambda.js';
import { LlmSimulator } from './llm.js';
import { SttASimulator } from './stt-a.js';
import { TtsASimulator } from './tts-a.js';
import { TtsBSimulator } from './tts-b.js';
import { TtsCSimulator } from './tts-c.js';
import { TtsDSimulator } from './tts-d.js';

const USAGE = `Usage: npm run sim [-- FIRST_PORT]

Starts the simulators of carrier A, carrier B, carrier C, the cloud function API, speech-to-text,
the language model, text-to-speech (tts_a…tts_d) and embeddings on 127.0.0.1, on eleven consecutive
ports from FIRST_PORT (default 4010: ports 4010-4020), and prints how to point the platform at them.
`;

const SIMULATORS = [
  'carrier A',
  'carrier B',
  'carrier C',
  'cloud function',
  'speech-to-text',
  'language model',
  'text-to-speech',
  'text-to-speech tts_b',
  'text-to-speech tts_c',
  'text-to-speech tts_d',
  'embeddings',
] as const;

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(USAGE);
  process.exit(0);
}
// `npm run sim -- 5010` starts them on 5010, 5011, 5012 and 5013 instead.
const firstPort = Number(args[0] ?? 4010);
if (
  args.length > 1 ||
  !Number.isInteger(firstPort) ||
  firstPort < 1 ||
  firstPort > 65535 - SIMULATORS.length + 1
) {
  process.stderr.write(`${args.length > 1 ? 'One argument at most' : `Not a port: ${args[0]}`}\n\n${USAGE}`);
  process.exit(2);
}

/** Why `port` cannot be listened on ('EADDRINUSE'…), or undefined when it can. */
function portProblem(port: number): Promise<string | undefined> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(undefined)));
  });
}

// Each port is tried before any simulator starts: a simulator's own listen error would end the
// process with a stack trace instead of saying which port is taken and what to do about it.
const problems = (
  await Promise.all(
    SIMULATORS.map(async (name, i) => ({
      name,
      port: firstPort + i,
      code: await portProblem(firstPort + i),
    })),
  )
).filter((p) => p.code !== undefined);
if (problems.length > 0) {
  for (const { name, port, code } of problems) {
    process.stderr.write(
      code === 'EADDRINUSE'
        ? `Port ${port} (the ${name} simulator) is already in use on 127.0.0.1 — another \`npm run sim\`?\n`
        : `Port ${port} (the ${name} simulator) cannot be opened on 127.0.0.1: ${code}\n`,
    );
  }
  const last = SIMULATORS.length - 1;
  const other = firstPort + 1000 + last <= 65535 ? firstPort + 1000 : 5010;
  process.stderr.write(
    `Choose other ports with: npm run sim -- FIRST_PORT   (${SIMULATORS.length} from FIRST_PORT, e.g. npm run sim -- ${other}` +
      ` for ${other}-${other + last})\n`,
  );
  process.exit(1);
}

const carrierA = new CarrierASimulator();
const carrierB = new CarrierBSimulator();
const carrierC = new CarrierCSimulator();
const accountA = { account_sid: 'AC00000000000000000000000000000001', auth_token: 'local-carrier-a-token' };
const accountB = { api_key: 'KEYlocalcarrierb', connection_id: 'local-connection' };
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const accountC = {
  application_id: '00000000-0000-4000-8000-000000000001',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};

carrierA.addAccount(accountA);
carrierB.addAccount(accountB);
carrierC.addAccount({
  application_id: accountC.application_id,
  public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
});

const lambda = new LambdaSimulator();
const cloudAccount = {
  accessKeyId: 'AKIALOCALDEMO0000001',
  secretAccessKey: 'local/demo+secret-key-0123456789abcdefgh',
};
lambda.addAccount(cloudAccount);
lambda.addFunctions(cloudAccount.accessKeyId, 'us-east-1', [
  {
    FunctionName: 'lookup-order',
    Description: 'Looks an order up by its number',
    Timeout: 10,
    MemorySize: 256,
    // What a function tool gets: {tool, arguments, call_id}; what it returns, the model is told.
    run: (event) => {
      const order = String(
        (event as { arguments?: { order_number?: unknown } }).arguments?.order_number ?? '',
      );
      return { order_number: order, status: 'shipped', arriving: 'Thursday' };
    },
  },
  {
    FunctionName: 'book-appointment',
    Runtime: 'python3.12',
    Handler: 'app.lambda_handler',
    Timeout: 30,
    run: (event) => {
      const when = (event as { arguments?: { when?: unknown } }).arguments?.when;
      return { booked: true, when: typeof when === 'string' ? when : 'tomorrow at 10 am' };
    },
  },
  { FunctionName: 'send-receipt', Description: '', Runtime: 'nodejs22.x', MemorySize: 512 },
]);
lambda.addGeneratedFunctions(cloudAccount.accessKeyId, 'eu-west-1', 120, 'eu-fn');

// The voice vendors, with one demo key each. The language model answers at a human pace (a third of
// a second to think, 30 tokens a second); speech-to-text hears the demo caller's words.
const voiceKeys = {
  stt_a: 'local-stt-key',
  llm_a: 'local-llm-key',
  llm_b: 'local-llm-b-key',
  tts_a: 'local-tts-key',
  tts_b: 'local-tts-b-key',
  tts_c: 'local-tts-c-key',
  tts_d: 'local-tts-d-key',
};
const stt = new SttASimulator();
stt.addKey(voiceKeys.stt_a);
stt.setScript('*', demoTranscript());
const llm = new LlmSimulator();
llm.addKey(voiceKeys.llm_a);
llm.addKey(voiceKeys.llm_b);
llm.pacing.ttftMs = 300;
llm.pacing.tokensPerSecond = 30;
const tts = new TtsASimulator();
tts.addKey(voiceKeys.tts_a);
const ttsB = new TtsBSimulator();
ttsB.addKey(voiceKeys.tts_b);
const ttsC = new TtsCSimulator();
ttsC.addKey(voiceKeys.tts_c);

// tts_d: an assistant using it names this project (`tts_settings.provider_config.project_uuid`).
const ttsDProject = 'local-tts-d-project';
const ttsD = new TtsDSimulator();
ttsD.addKey(voiceKeys.tts_d);
ttsD.addProject(ttsDProject);
// Knowledge bases embed with the llm_a key.
const embeddings = new EmbeddingsSimulator();
embeddings.addKey(voiceKeys.llm_a);
// Every call placed through carrier A is answered by the demo caller.
carrierA.setPhone('*', demoCaller);
carrierB.setPhone('*', demoCaller);
carrierC.setPhone('*', demoCaller);

const [a, b, c, l, s, m, t, tb, tc, d, e] = await Promise.all([
  carrierA.start(firstPort),
  carrierB.start(firstPort + 1),
  carrierC.start(firstPort + 2),
  lambda.start(firstPort + 3),
  stt.start(firstPort + 4),
  llm.start(firstPort + 5),
  tts.start(firstPort + 6),
  ttsB.start(firstPort + 7),
  ttsC.start(firstPort + 8),
  ttsD.start(firstPort + 9),
  embeddings.start(firstPort + 10),
]);

// One simulator per carrier of `providers/ids.ts`: the type asks for every one of them.
const carriers: Record<CarrierId, Record<string, string>> = {
  carrier_a: accountA,
  carrier_b: { ...accountB, public_key: carrierB.publicKey },
  carrier_c: { ...accountC, signature_secret: carrierC.signatureSecret },
};
const organization = {
  ...carriers,
  api_keys: {
    llm_a: { api_key: voiceKeys.llm_a },
    llm_b: { api_key: voiceKeys.llm_b },
    stt_a: { api_key: voiceKeys.stt_a },
    tts_a: { api_key: voiceKeys.tts_a },
    tts_b: { api_key: voiceKeys.tts_b },
    tts_c: { api_key: voiceKeys.tts_c },
    tts_d: { api_key: voiceKeys.tts_d },
  },
};
// Installed before the banner: whoever reads "Stop with Ctrl-C." may signal at once (a test does), and
// a signal with no handler yet would end the process without stopping the simulators.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all([
      carrierA.stop(),
      carrierB.stop(),
      carrierC.stop(),
      lambda.stop(),
      stt.stop(),
      llm.stop(),
      tts.stop(),
      ttsB.stop(),
      ttsC.stop(),
      ttsD.stop(),
      embeddings.stop(),
    ]).then(() => process.exit(0));
  });
}

console.log(`Simulators (carriers and cloud functions) are running. Start the platform with:

  CARRIER_A_BASE_URL=${a} CARRIER_B_BASE_URL=${b} CARRIER_C_BASE_URL=${c} \\
    LAMBDA_ENDPOINT_URL=${l} STT_BASE_URL=${s} LLM_A_BASE_URL=${m} LLM_B_BASE_URL=${m} \\
    TTS_A_BASE_URL=${t} TTS_B_BASE_URL=${tb} TTS_C_BASE_URL=${tc} TTS_D_BASE_URL=${d} \\
    EMBEDDINGS_BASE_URL=${e} npm start

then store these credentials in your organization (admin):

  curl -s -X PUT http://127.0.0.1:8000/api/v1/organization -H "authorization: Bearer $TOKEN" \\
    -H 'content-type: application/json' -d '${JSON.stringify(organization).replace(/'/g, "'\\''")}'

The private key changes at every start of the simulators: store the credentials again after one.
An assistant speaking with tts_d names the project: "tts_settings":{"provider":"tts_d","provider_config":{"project_uuid":"${ttsDProject}"}}.
A call placed through any carrier is answered by a simulated caller who says, in turn: ${DEMO_UTTERANCES.join(', ')}.

List the demo cloud account's functions (3 in us-east-1, 120 in eu-west-1):

  curl -s -X POST http://127.0.0.1:8000/api/serverless/list-functions -H "authorization: Bearer $TOKEN" \\
    --data-urlencode 'access_key=${cloudAccount.accessKeyId}' \\
    --data-urlencode 'secret_key=${cloudAccount.secretAccessKey}' --data-urlencode 'region=us-east-1'

Stop with Ctrl-C.`);
