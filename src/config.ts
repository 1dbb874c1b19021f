/**
 * The only reader of the environment. Every setting is declared once in `variables` below (name,
 * default, description, parser); `loadConfig` validates them all at start and reports every bad
 * value by name, so an operator fixes a broken deployment in one go rather than one error at a time.
 * The rest of the code receives the typed `Config` object and never looks at `process.env`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { CountryCode } from 'libphonenumber-js';
import {
  boolean,
  decimal,
  httpUrl,
  InvalidValue,
  integer,
  oneOf,
  phoneRegion,
  secretKey,
  text,
  trustedProxies,
  url,
  variable,
} from './config-values.js';
import type { LlmProvider, TtsProvider } from './providers/ids.js';

/** Every environment variable Switchboard reads. `docs/configuration.md` documents each of them. */
export const variables = {
  NODE_ENV: variable(
    'development',
    '`production` requires SECRET_KEY and refuses private webhook targets by default.',
    oneOf(['development', 'production', 'test'] as const),
  ),
  HOST: variable('127.0.0.1', 'Interface the HTTP server binds to.', text),
  PORT: variable('8000', 'Port of the HTTP server (0 picks a free one).', integer(0, 65535)),
  PUBLIC_URL: variable(
    'http://HOST:PORT',
    'The https/wss base address that carriers and browsers reach this server at.',
    httpUrl,
  ),
  DATA_DIR: variable(
    './data',
    'Embedded database, generated secret key, mail files and the process lock live here.',
    text,
  ),
  DATABASE_URL: variable(
    undefined,
    'A PostgreSQL server (postgres://user:pass@host:5432/db). Unset: embedded PostgreSQL under DATA_DIR.',
    url(['postgres:', 'postgresql:']),
  ),
  DATABASE_POOL_SIZE: variable('10', 'Connections per process when DATABASE_URL is set.', integer(1, 200)),
  SECRET_KEY: variable(
    undefined,
    'Signs tokens and encrypts credentials at rest (32+ characters). Unset outside production: generated once into DATA_DIR/secret.key (mode 0600).',
    secretKey,
  ),
  LOG_LEVEL: variable(
    'info',
    'fatal, error, warn, info, debug, trace or silent.',
    oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
  ),
  SMTP_URL: variable(
    undefined,
    'smtp:// or smtps:// URL of a mail server. Unset: each mail is written to DATA_DIR/mail/*.eml.',
    url(['smtp:', 'smtps:']),
  ),
  MAIL_FROM: variable('Switchboard <no-reply@switchboard.local>', 'Sender of every mail.', text),
  TRIAL_CREDITS: variable('10.00', "Credits granted to a user's first organization.", decimal(0)),
  LOGIN_MAX_FAILURES: variable(
    '10',
    'Failed sign-ins allowed per email within LOGIN_FAILURE_WINDOW_MINUTES; more answer 429.',
    integer(1, 10_000),
  ),
  LOGIN_MAX_FAILURES_PER_ADDRESS: variable(
    '30',
    'Failed sign-ins allowed from one client address (any emails) within LOGIN_FAILURE_WINDOW_MINUTES; more answer 429. Keep it above LOGIN_MAX_FAILURES: people behind one NAT share it.',
    integer(1, 1_000_000),
  ),
  LOGIN_FAILURE_WINDOW_MINUTES: variable(
    '15',
    'Window in which failed sign-ins are counted.',
    integer(1, 24 * 60),
  ),
  TRUST_PROXY: variable(
    undefined,
    'Addresses of the reverse proxies in front of the server, comma-separated (addresses, CIDR ranges, loopback, linklocal, uniquelocal): a request from one of them is counted and logged under the address its X-Forwarded-For names. Unset: the connecting address, X-Forwarded-For ignored.',
    trustedProxies,
  ),
  ACCESS_TOKEN_TTL_MINUTES: variable('30', 'Lifetime of a JWT access token.', integer(1, 24 * 60)),
  SESSION_TTL_DAYS: variable(
    '30',
    'Lifetime of a refresh token and of the dashboard session cookie.',
    integer(1, 365),
  ),
  BODY_LIMIT_BYTES: variable(
    '1048576',
    'Largest accepted request body; larger ones get 413.',
    integer(1024, 1 << 30),
  ),
  ALLOW_PRIVATE_TARGETS: variable(
    'true when embedded, false otherwise',
    'Allow loopback and private addresses as webhook, media, LLM and tool URLs (link-local and cloud metadata addresses are refused always).',
    boolean,
  ),
  METRICS_TOKEN: variable(
    undefined,
    'When set, GET /metrics requires `Authorization: Bearer <METRICS_TOKEN>`.',
    text,
  ),
  WORKERS_ENABLED: variable('true', 'Run job-queue workers in this process (false: API only).', boolean),
  SHUTDOWN_TIMEOUT_MS: variable(
    '15000',
    'How long a stop waits for running jobs and requests before closing the database.',
    integer(0, 600_000),
  ),
  PRICE_CALL_PER_MINUTE: variable('0.05', 'Call price, billed per started second.', decimal(0)),
  PRICE_SMS_SEGMENT: variable('0.0075', 'Price of one SMS segment.', decimal(0)),
  DEFAULT_PHONE_REGION: variable(
    'US',
    'Region of campaign contact numbers written without a country code (an import may name its own `default_region`).',
    phoneRegion,
  ),
  CONTACT_IMPORT_MAX_BYTES: variable(
    '52428800',
    'Largest file a campaign contact import accepts (50 MiB); larger ones get 413.',
    integer(1024, 1 << 30),
  ),
  KNOWLEDGE_MAX_UPLOAD_BYTES: variable(
    '20971520',
    'Largest knowledge-base document an upload accepts (20 MiB); larger ones get 413.',
    integer(1024, 1 << 30),
  ),
  KNOWLEDGE_RECOVER_AFTER_SECONDS: variable(
    '120',
    'Seconds without progress after which a knowledge-base document being processed is handed to a new job (its process died).',
    integer(1, 86_400),
  ),
  KNOWLEDGE_SWEEP_INTERVAL_SECONDS: variable(
    '15',
    'How often a worker process looks for knowledge-base documents whose processing stopped making progress.',
    integer(1, 3600),
  ),
  CAMPAIGN_ORGANIZATION_CONCURRENCY: variable(
    '20',
    "Campaign attempts (calls and SMS) one organization may have in flight at once, over all its campaigns; each campaign's own `concurrency_limit` applies too.",
    integer(1, 10_000),
  ),
  CAMPAIGN_SWEEP_INTERVAL_SECONDS: variable(
    '15',
    'How often a worker process looks for due schedules, idle running campaigns and attempts whose status callbacks never came.',
    integer(1, 3600),
  ),
  CAMPAIGN_RECOVER_AFTER_SECONDS: variable(
    '90',
    "Seconds without news after which a campaign attempt's call is looked up at the carrier (a lost status callback, or a process that stopped mid-dial).",
    integer(1, 86_400),
  ),
  SERVERLESS_LIST_TIMEOUT_SECONDS: variable(
    '30',
    'Longest a serverless function listing (every page) may take; slower ones answer 500.',
    integer(1, 300),
  ),
  SERVERLESS_LIST_RATE_PER_MINUTE: variable(
    '10',
    'Serverless function listings one organization may run per minute (counted in the database, cluster-wide); more answer 429.',
    integer(1, 10_000),
  ),
  STORAGE_BACKEND: variable(
    'files',
    'Where recordings and other files are kept: `files` (under DATA_DIR/storage) or `s3` (an S3-compatible bucket, the S3_ settings).',
    oneOf(['files', 's3'] as const),
  ),
  S3_ENDPOINT_URL: variable(
    'https://s3.S3_REGION.amazonaws.com',
    'The S3-compatible service (MinIO, R2, …); buckets are addressed path-style (`{endpoint}/{bucket}/{key}`).',
    httpUrl,
  ),
  S3_BUCKET: variable(undefined, 'The bucket (required with STORAGE_BACKEND=s3).', text),
  S3_REGION: variable('us-east-1', 'The region requests are signed for.', text),
  S3_ACCESS_KEY_ID: variable(undefined, 'Access key id (required with STORAGE_BACKEND=s3).', text),
  S3_SECRET_ACCESS_KEY: variable(
    undefined,
    'Secret access key (required with STORAGE_BACKEND=s3); never logged.',
    text,
  ),
  RECORDING_URL_TTL_HOURS: variable(
    '24',
    'How long the signed recording URL in an end-of-call webhook stays valid.',
    integer(1, 24 * 30),
  ),
  CARRIER_A_BASE_URL: variable('https://api.twilio.com', 'REST API of carrier_a.', httpUrl),
  CARRIER_B_BASE_URL: variable('https://api.telnyx.com', 'Call-control API of carrier_b.', httpUrl),
  CARRIER_C_BASE_URL: variable('https://api.nexmo.com', 'Voice and messaging API of carrier_c.', httpUrl),
  LAMBDA_ENDPOINT_URL: variable(
    undefined,
    'Cloud function API endpoint override (unset: the public endpoint of the region).',
    httpUrl,
  ),
  LLM_A_BASE_URL: variable('https://api.openai.com/v1', 'Language model vendor llm_a.', httpUrl),
  LLM_B_BASE_URL: variable('https://api.anthropic.com/v1', 'Language model vendor llm_b.', httpUrl),
  LLM_C_BASE_URL: variable(
    'https://generativelanguage.googleapis.com/v1beta/openai',
    'Language model vendor llm_c.',
    httpUrl,
  ),
  LLM_D_BASE_URL: variable('https://api.groq.com/openai/v1', 'Language model vendor llm_d.', httpUrl),
  LLM_E_BASE_URL: variable('https://api.deepseek.com/v1', 'Language model vendor llm_e.', httpUrl),
  STT_BASE_URL: variable('https://api.deepgram.com', 'Speech-to-text vendor stt_a.', httpUrl),
  TTS_A_BASE_URL: variable('https://api.elevenlabs.io', 'Text-to-speech vendor tts_a.', httpUrl),
  TTS_B_BASE_URL: variable('https://api.openai.com/v1', 'Text-to-speech vendor tts_b.', httpUrl),
  TTS_C_BASE_URL: variable('https://texttospeech.googleapis.com', 'Text-to-speech vendor tts_c.', httpUrl),
  TTS_D_BASE_URL: variable('https://f.cluster.resemble.ai', 'Text-to-speech vendor tts_d.', httpUrl),
  EMBEDDINGS_BASE_URL: variable(
    'https://api.openai.com/v1',
    'OpenAI-compatible embeddings API for knowledge bases (keys: llm_a, see docs/knowledge.md).',
    httpUrl,
  ),
} as const;

export type VariableName = keyof typeof variables;
type Env = Readonly<Record<string, string | undefined>>;

export interface ProviderUrls {
  carrierA: string;
  carrierB: string;
  carrierC: string;
  lambda: string | undefined;
  /** Keyed by the ids of `providers/ids.ts`: a vendor added there needs its address here. */
  llm: Record<LlmProvider, string>;
  stt: string;
  tts: Record<TtsProvider, string>;
  /** The OpenAI-compatible embeddings API knowledge bases use (domains/knowledge). */
  embeddings: string;
}

/** Where the storage interface (`src/storage/`) keeps its objects. */
export type StorageConfig =
  | { backend: 'files'; dir: string }
  | {
      backend: 's3';
      endpoint: string;
      bucket: string;
      region: string;
      accessKeyId: string;
      secretAccessKey: string;
    };

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Undefined until `resolveSecretKey` fills it from DATA_DIR; required in production. */
  secretKey: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  smtpUrl: string | undefined;
  mailFrom: string;
  trialCredits: number;
  accessTokenTtlSeconds: number;
  login: { maxFailures: number; maxFailuresPerAddress: number; failureWindowSeconds: number };
  /** Fastify's `trustProxy`: which X-Forwarded-For hops name the client (`false`: none). */
  trustProxy: false | string[];
  sessionTtlSeconds: number;
  bodyLimitBytes: number;
  allowPrivateTargets: boolean;
  metricsToken: string | undefined;
  workersEnabled: boolean;
  shutdownTimeoutMs: number;
  prices: { callPerMinute: number; smsSegment: number };
  contacts: { defaultPhoneRegion: CountryCode; importMaxBytes: number };
  campaigns: { organizationConcurrency: number; sweepIntervalSeconds: number; recoverAfterSeconds: number };
  serverless: { listTimeoutMs: number; listRatePerMinute: number };
  storage: StorageConfig;
  recordings: { urlTtlSeconds: number };
  knowledge: { maxUploadBytes: number; recoverAfterSeconds: number; sweepIntervalSeconds: number };
  providers: ProviderUrls;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Validates the environment and returns the typed configuration. Throws `ConfigError` naming
 * every bad variable. `env` defaults to the process environment, after reading `./.env` if present.
 */
export function loadConfig(env: Env = readProcessEnv()): Config {
  const problems: string[] = [];
  function read<N extends VariableName>(name: N): ReturnType<(typeof variables)[N]['parse']> | undefined {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    try {
      return variables[name].parse(raw) as ReturnType<(typeof variables)[N]['parse']>;
    } catch (error) {
      problems.push(`${name} ${error instanceof InvalidValue ? error.message : 'is invalid'}`);
      return undefined;
    }
  }
  function readOr<N extends VariableName>(name: N): ReturnType<(typeof variables)[N]['parse']> {
    const value = read(name);
    if (value !== undefined) return value;
    return variables[name].parse(variables[name].default as string) as ReturnType<
      (typeof variables)[N]['parse']
    >;
  }

  const nodeEnv = readOr('NODE_ENV');
  const host = readOr('HOST');
  const port = readOr('PORT');
  const databaseUrl = read('DATABASE_URL');
  const secret = read('SECRET_KEY');
  if (nodeEnv === 'production' && (env.SECRET_KEY ?? '') === '') {
    problems.push('SECRET_KEY is required when NODE_ENV=production');
  }
  const embedded = databaseUrl === undefined;
  const dataDir = path.resolve(readOr('DATA_DIR'));
  const storage = readStorage(dataDir);

  const config: Config = {
    env: nodeEnv,
    host,
    port,
    publicUrl: read('PUBLIC_URL') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    dataDir,
    databaseUrl,
    databasePoolSize: readOr('DATABASE_POOL_SIZE'),
    secretKey: secret,
    logLevel: readOr('LOG_LEVEL'),
    smtpUrl: read('SMTP_URL'),
    mailFrom: readOr('MAIL_FROM'),
    trialCredits: readOr('TRIAL_CREDITS'),
    accessTokenTtlSeconds: readOr('ACCESS_TOKEN_TTL_MINUTES') * 60,
    login: {
      maxFailures: readOr('LOGIN_MAX_FAILURES'),
      maxFailuresPerAddress: readOr('LOGIN_MAX_FAILURES_PER_ADDRESS'),
      failureWindowSeconds: readOr('LOGIN_FAILURE_WINDOW_MINUTES') * 60,
    },
    trustProxy: read('TRUST_PROXY') ?? false,
    sessionTtlSeconds: readOr('SESSION_TTL_DAYS') * 86_400,
    bodyLimitBytes: readOr('BODY_LIMIT_BYTES'),
    allowPrivateTargets: read('ALLOW_PRIVATE_TARGETS') ?? (embedded && nodeEnv !== 'production'),
    metricsToken: read('METRICS_TOKEN'),
    workersEnabled: readOr('WORKERS_ENABLED'),
    shutdownTimeoutMs: readOr('SHUTDOWN_TIMEOUT_MS'),
    prices: { callPerMinute: readOr('PRICE_CALL_PER_MINUTE'), smsSegment: readOr('PRICE_SMS_SEGMENT') },
    contacts: {
      defaultPhoneRegion: readOr('DEFAULT_PHONE_REGION'),
      importMaxBytes: readOr('CONTACT_IMPORT_MAX_BYTES'),
    },
    campaigns: {
      organizationConcurrency: readOr('CAMPAIGN_ORGANIZATION_CONCURRENCY'),
      sweepIntervalSeconds: readOr('CAMPAIGN_SWEEP_INTERVAL_SECONDS'),
      recoverAfterSeconds: readOr('CAMPAIGN_RECOVER_AFTER_SECONDS'),
    },
    serverless: {
      listTimeoutMs: readOr('SERVERLESS_LIST_TIMEOUT_SECONDS') * 1000,
      listRatePerMinute: readOr('SERVERLESS_LIST_RATE_PER_MINUTE'),
    },
    storage,
    recordings: { urlTtlSeconds: readOr('RECORDING_URL_TTL_HOURS') * 3600 },
    knowledge: {
      maxUploadBytes: readOr('KNOWLEDGE_MAX_UPLOAD_BYTES'),
      recoverAfterSeconds: readOr('KNOWLEDGE_RECOVER_AFTER_SECONDS'),
      sweepIntervalSeconds: readOr('KNOWLEDGE_SWEEP_INTERVAL_SECONDS'),
    },
    providers: {
      carrierA: readOr('CARRIER_A_BASE_URL'),
      carrierB: readOr('CARRIER_B_BASE_URL'),
      carrierC: readOr('CARRIER_C_BASE_URL'),
      lambda: read('LAMBDA_ENDPOINT_URL'),
      llm: {
        llm_a: readOr('LLM_A_BASE_URL'),
        llm_b: readOr('LLM_B_BASE_URL'),
        llm_c: readOr('LLM_C_BASE_URL'),
        llm_d: readOr('LLM_D_BASE_URL'),
        llm_e: readOr('LLM_E_BASE_URL'),
      },
      stt: readOr('STT_BASE_URL'),
      tts: {
        tts_a: readOr('TTS_A_BASE_URL'),
        tts_b: readOr('TTS_B_BASE_URL'),
        tts_c: readOr('TTS_C_BASE_URL'),
        tts_d: readOr('TTS_D_BASE_URL'),
      },
      embeddings: readOr('EMBEDDINGS_BASE_URL'),
    },
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;

  /** The storage backend; a bucket needs its name and credentials. */
  function readStorage(dir: string): StorageConfig {
    if (readOr('STORAGE_BACKEND') === 'files') return { backend: 'files', dir: path.join(dir, 'storage') };
    const region = readOr('S3_REGION');
    const required = (name: 'S3_BUCKET' | 'S3_ACCESS_KEY_ID' | 'S3_SECRET_ACCESS_KEY') => {
      const value = read(name);
      if (value === undefined) problems.push(`${name} is required when STORAGE_BACKEND=s3`);
      return value ?? '';
    };
    return {
      backend: 's3',
      endpoint: read('S3_ENDPOINT_URL') ?? `https://s3.${region}.amazonaws.com`,
      bucket: required('S3_BUCKET'),
      region,
      accessKeyId: required('S3_ACCESS_KEY_ID'),
      secretAccessKey: required('S3_SECRET_ACCESS_KEY'),
    };
  }
}

/** Reads `./.env` (if any) into the process environment without overriding what is already set. */
function readProcessEnv(): Env {
  const file = path.resolve('.env');
  if (existsSync(file)) {
    const before = { ...process.env };
    process.loadEnvFile(file);
    Object.assign(process.env, before);
  }
  return process.env;
}
