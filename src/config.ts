/**
 * The only reader of the environment. Every setting is declared once in `variables` (config-variables.ts) (name,
 * default, description, parser); `loadConfig` validates them all at start and reports every bad
 * value by name, so an operator fixes a broken deployment in one go rather than one error at a time.
 * The rest of the code receives the typed `Config` object and never looks at `process.env`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { CountryCode } from 'libphonenumber-js';
import { InvalidValue } from './config-values.js';
import { type VariableName, variables } from './config-variables.js';
import type { LlmProvider, TtsProvider } from './providers/ids.js';

export { type VariableName, variables } from './config-variables.js';

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

/** The SIP agent's sockets (docs/sip.md, "Ports to open"). */
export interface SipConfig {
  enabled: boolean;
  host: string;
  port: number;
  /** What trunks are told to reach: Via and Contact hosts, the SDP connection address. */
  publicHost: string;
  rtpPorts: { min: number; max: number };
  /** An outbound call rings this long before it is cancelled (no-answer). */
  ringTimeoutSeconds: number;
  /** Between two rounds of trunk upkeep (OPTIONS pings, registrations). */
  trunkCheckIntervalSeconds: number;
  tls?: { port: number; certFile: string; keyFile: string };
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
  sip: SipConfig;
  recordings: { urlTtlSeconds: number };
  knowledge: {
    maxUploadBytes: number;
    recoverAfterSeconds: number;
    sweepIntervalSeconds: number;
    efSearch: number;
  };
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
    sip: readSip(),
    recordings: { urlTtlSeconds: readOr('RECORDING_URL_TTL_HOURS') * 3600 },
    knowledge: {
      maxUploadBytes: readOr('KNOWLEDGE_MAX_UPLOAD_BYTES'),
      recoverAfterSeconds: readOr('KNOWLEDGE_RECOVER_AFTER_SECONDS'),
      sweepIntervalSeconds: readOr('KNOWLEDGE_SWEEP_INTERVAL_SECONDS'),
      efSearch: readOr('KNOWLEDGE_HNSW_EF_SEARCH'),
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

  /** The SIP agent: where it listens, the address it gives trunks, its RTP ports and TLS. */
  function readSip(): SipConfig {
    const sipHost = read('SIP_HOST') ?? host;
    const rtpPorts = { min: readOr('RTP_PORT_MIN'), max: readOr('RTP_PORT_MAX') };
    if (rtpPorts.min % 2 !== 0)
      problems.push('RTP_PORT_MIN must be even (RTP on even ports, RTCP on the next)');
    if (rtpPorts.max - rtpPorts.min < 1) problems.push('RTP_PORT_MAX must be above RTP_PORT_MIN');
    const tlsPort = read('SIP_TLS_PORT');
    const certFile = read('SIP_TLS_CERT_FILE');
    const keyFile = read('SIP_TLS_KEY_FILE');
    if (tlsPort !== undefined && (certFile === undefined || keyFile === undefined))
      problems.push('SIP_TLS_PORT needs SIP_TLS_CERT_FILE and SIP_TLS_KEY_FILE');
    return {
      enabled: readOr('SIP_ENABLED'),
      host: sipHost,
      port: readOr('SIP_PORT'),
      publicHost: read('SIP_PUBLIC_HOST') ?? sipHost,
      rtpPorts,
      ringTimeoutSeconds: readOr('SIP_RING_TIMEOUT_SECONDS'),
      trunkCheckIntervalSeconds: readOr('SIP_TRUNK_CHECK_INTERVAL_SECONDS'),
      ...(tlsPort !== undefined && certFile && keyFile ? { tls: { port: tlsPort, certFile, keyFile } } : {}),
    };
  }

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
