/**
 * Configuration (decisions §1): every setting comes from the environment, is validated once, and a
 * bad value stops the start with a message naming the variable — all bad values at once. Also the
 * generated SECRET_KEY of the embedded mode, and that docs/configuration.md documents every variable.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, variables } from '../src/config.js';
import { resolveSecretKey } from '../src/lib/secret-key.js';

const GOOD_SECRET = 'a-production-secret-key-of-at-least-32-chars';

/** The problems `loadConfig` reports for `env`; fails the test if it accepts the environment. */
function problemsOf(env: Record<string, string>): { problems: string[]; message: string } {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const configError = error as ConfigError;
    return { problems: configError.problems, message: configError.message };
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('defaults', () => {
  it('starts with no environment at all', () => {
    const config = loadConfig({});
    expect(config.env).toBe('development');
    expect(config.port).toBe(8000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.publicUrl).toBe('http://127.0.0.1:8000');
    expect(config.dataDir).toBe(path.resolve('./data'));
    expect(config.databaseUrl).toBeUndefined();
    expect(config.secretKey).toBeUndefined();
    expect(config.smtpUrl).toBeUndefined();
    expect(config.logLevel).toBe('info');
    expect(config.trialCredits).toBe(10);
    expect(config.bodyLimitBytes).toBe(1_048_576);
    expect(config.workersEnabled).toBe(true);
    expect(config.metricsToken).toBeUndefined();
    expect(config.accessTokenTtlSeconds).toBe(30 * 60);
    expect(config.sessionTtlSeconds).toBe(30 * 86_400);
    expect(config.prices).toEqual({ callPerMinute: 0.05, smsSegment: 0.0075 });
    expect(config.providers.lambda).toBeUndefined();
    expect(config.serverless).toEqual({ listTimeoutMs: 30_000, listRatePerMinute: 10 });
  });

  it('derives PUBLIC_URL from HOST and PORT unless it is set', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '9100' }).publicUrl).toBe('http://0.0.0.0:9100');
    expect(loadConfig({ PORT: '8123' }).publicUrl).toBe('http://127.0.0.1:8123');
    expect(loadConfig({ HOST: '::1' }).publicUrl).toBe('http://[::1]:8000');
    expect(loadConfig({ HOST: '0.0.0.0', PUBLIC_URL: 'https://voice.example.com' }).publicUrl).toBe(
      'https://voice.example.com',
    );
    // A trailing slash is dropped so that paths can be appended.
    expect(loadConfig({ PUBLIC_URL: 'https://voice.example.com/' }).publicUrl).toBe(
      'https://voice.example.com',
    );
  });

  it('treats an empty value as unset', () => {
    const config = loadConfig({ PORT: '', HOST: '', LOG_LEVEL: '', DATABASE_URL: '', WORKERS_ENABLED: '' });
    expect(config.port).toBe(8000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.logLevel).toBe('info');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.workersEnabled).toBe(true);
  });

  it('counts sign-in failures per address above the per-email limit, and trusts no proxy', () => {
    const config = loadConfig({});
    expect(config.login).toEqual({ maxFailures: 10, maxFailuresPerAddress: 30, failureWindowSeconds: 900 });
    expect(config.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: ' 10.0.0.1, fd00::/8 ,loopback' }).trustProxy).toEqual([
      '10.0.0.1',
      'fd00::/8',
      'loopback',
    ]);
  });

  it('allows private targets only in the embedded development default', () => {
    expect(loadConfig({}).allowPrivateTargets).toBe(true);
    expect(loadConfig({ DATABASE_URL: 'postgres://sb@db.internal:5432/sb' }).allowPrivateTargets).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: GOOD_SECRET }).allowPrivateTargets).toBe(false);
    // An explicit setting wins either way.
    expect(
      loadConfig({ NODE_ENV: 'production', SECRET_KEY: GOOD_SECRET, ALLOW_PRIVATE_TARGETS: 'true' })
        .allowPrivateTargets,
    ).toBe(true);
    expect(loadConfig({ ALLOW_PRIVATE_TARGETS: 'false' }).allowPrivateTargets).toBe(false);
  });

  it('listens for SIP beside HTTP, on 5060 with RTP on 10000–20000, TLS only with a certificate', () => {
    expect(loadConfig({}).sip).toEqual({
      enabled: true,
      host: '127.0.0.1',
      port: 5060,
      publicHost: '127.0.0.1',
      rtpPorts: { min: 10000, max: 20000 },
      ringTimeoutSeconds: 60,
      trunkCheckIntervalSeconds: 30,
    });
    const sip = loadConfig({
      HOST: '0.0.0.0',
      SIP_PUBLIC_HOST: '203.0.113.7',
      SIP_PORT: '5080',
      RTP_PORT_MIN: '40000',
      RTP_PORT_MAX: '40099',
      SIP_TLS_PORT: '5061',
      SIP_TLS_CERT_FILE: '/etc/sb/cert.pem',
      SIP_TLS_KEY_FILE: '/etc/sb/key.pem',
      SIP_ENABLED: 'false',
    }).sip;
    expect(sip).toEqual({
      enabled: false,
      host: '0.0.0.0',
      port: 5080,
      publicHost: '203.0.113.7',
      rtpPorts: { min: 40000, max: 40099 },
      ringTimeoutSeconds: 60,
      trunkCheckIntervalSeconds: 30,
      tls: { port: 5061, certFile: '/etc/sb/cert.pem', keyFile: '/etc/sb/key.pem' },
    });
  });

  it('reads valid values, including the edges of each range', () => {
    const config = loadConfig({
      PORT: '0',
      DATABASE_URL: 'postgresql://sb:pw@127.0.0.1:5432/sb',
      SECRET_KEY: 'x'.repeat(32),
      LOG_LEVEL: 'silent',
      SMTP_URL: 'smtps://user:pw@mail.example.com:465',
      TRIAL_CREDITS: '0',
      WORKERS_ENABLED: 'no',
      ALLOW_PRIVATE_TARGETS: 'yes',
      BODY_LIMIT_BYTES: '1024',
      METRICS_TOKEN: 'metrics-token',
      PRICE_CALL_PER_MINUTE: '0.12',
    });
    expect(config.port).toBe(0);
    expect(config.databaseUrl).toBe('postgresql://sb:pw@127.0.0.1:5432/sb');
    expect(config.secretKey).toBe('x'.repeat(32));
    expect(config.logLevel).toBe('silent');
    expect(config.smtpUrl).toBe('smtps://user:pw@mail.example.com:465');
    expect(config.trialCredits).toBe(0);
    expect(config.workersEnabled).toBe(false);
    expect(config.allowPrivateTargets).toBe(true);
    expect(config.bodyLimitBytes).toBe(1024);
    expect(config.metricsToken).toBe('metrics-token');
    expect(config.prices.callPerMinute).toBe(0.12);
    expect(loadConfig({ PORT: '65535' }).port).toBe(65535);
    expect(
      loadConfig({ SERVERLESS_LIST_TIMEOUT_SECONDS: '1', SERVERLESS_LIST_RATE_PER_MINUTE: '10000' })
        .serverless,
    ).toEqual({ listTimeoutMs: 1_000, listRatePerMinute: 10_000 });
  });

  it('points every outside provider at its own override', () => {
    const config = loadConfig({
      CARRIER_A_BASE_URL: 'http://127.0.0.1:7001/',
      CARRIER_B_BASE_URL: 'http://127.0.0.1:7002',
      CARRIER_C_BASE_URL: 'http://127.0.0.1:7003',
      LAMBDA_ENDPOINT_URL: 'http://127.0.0.1:7004',
      LLM_A_BASE_URL: 'http://127.0.0.1:7011/v1',
      LLM_B_BASE_URL: 'http://127.0.0.1:7012/v1',
      LLM_C_BASE_URL: 'http://127.0.0.1:7013/v1',
      LLM_D_BASE_URL: 'http://127.0.0.1:7014/v1',
      LLM_E_BASE_URL: 'http://127.0.0.1:7015/v1',
      STT_BASE_URL: 'http://127.0.0.1:7021',
      TTS_A_BASE_URL: 'http://127.0.0.1:7031',
      TTS_B_BASE_URL: 'http://127.0.0.1:7032',
      TTS_C_BASE_URL: 'http://127.0.0.1:7033',
      TTS_D_BASE_URL: 'http://127.0.0.1:7034',
      EMBEDDINGS_BASE_URL: 'http://127.0.0.1:7041/v1/',
    });
    expect(config.providers).toEqual({
      carrierA: 'http://127.0.0.1:7001',
      carrierB: 'http://127.0.0.1:7002',
      carrierC: 'http://127.0.0.1:7003',
      lambda: 'http://127.0.0.1:7004',
      llm: {
        llm_a: 'http://127.0.0.1:7011/v1',
        llm_b: 'http://127.0.0.1:7012/v1',
        llm_c: 'http://127.0.0.1:7013/v1',
        llm_d: 'http://127.0.0.1:7014/v1',
        llm_e: 'http://127.0.0.1:7015/v1',
      },
      stt: 'http://127.0.0.1:7021',
      tts: {
        tts_a: 'http://127.0.0.1:7031',
        tts_b: 'http://127.0.0.1:7032',
        tts_c: 'http://127.0.0.1:7033',
        tts_d: 'http://127.0.0.1:7034',
      },
      embeddings: 'http://127.0.0.1:7041/v1',
    });
  });

  it('declares every variable decisions §1 and §6 name', () => {
    const required = [
      'PORT',
      'HOST',
      'DATA_DIR',
      'DATABASE_URL',
      'PUBLIC_URL',
      'SECRET_KEY',
      'SMTP_URL',
      'LOG_LEVEL',
      'TRIAL_CREDITS',
      'ALLOW_PRIVATE_TARGETS',
      'CARRIER_A_BASE_URL',
      'CARRIER_B_BASE_URL',
      'CARRIER_C_BASE_URL',
      'LAMBDA_ENDPOINT_URL',
      'LLM_A_BASE_URL',
      'LLM_B_BASE_URL',
      'LLM_C_BASE_URL',
      'LLM_D_BASE_URL',
      'LLM_E_BASE_URL',
      'STT_BASE_URL',
      'TTS_A_BASE_URL',
      'TTS_B_BASE_URL',
      'TTS_C_BASE_URL',
      'TTS_D_BASE_URL',
      'PRICE_CALL_PER_MINUTE',
      'PRICE_SMS_SEGMENT',
    ];
    expect(Object.keys(variables)).toEqual(expect.arrayContaining(required));
  });
});

describe('bad values', () => {
  const cases: Array<[string, string]> = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['LOG_LEVEL', 'loud'],
    ['NODE_ENV', 'staging'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_POOL_SIZE', '0'],
    ['SECRET_KEY', 'too-short-secret'],
    ['SECRET_KEY', 'x'.repeat(31)],
    ['TRIAL_CREDITS', '-1'],
    ['TRIAL_CREDITS', 'ten'],
    ['CARRIER_A_BASE_URL', 'notaurl'],
    ['CARRIER_A_BASE_URL', 'ftp://files.example.com'],
    ['LLM_C_BASE_URL', 'notaurl'],
    ['TTS_D_BASE_URL', 'javascript:alert(1)'],
    ['PUBLIC_URL', 'voice.example.com'],
    ['SMTP_URL', 'http://mail.example.com'],
    ['WORKERS_ENABLED', 'maybe'],
    ['ALLOW_PRIVATE_TARGETS', 'sometimes'],
    ['BODY_LIMIT_BYTES', '10'],
    ['PRICE_SMS_SEGMENT', '-0.01'],
    ['ACCESS_TOKEN_TTL_MINUTES', '0'],
    ['SERVERLESS_LIST_TIMEOUT_SECONDS', '0'],
    ['SERVERLESS_LIST_TIMEOUT_SECONDS', '2.5'],
    ['SERVERLESS_LIST_RATE_PER_MINUTE', '0'],
    ['LOGIN_MAX_FAILURES_PER_ADDRESS', '0'],
    ['TRUST_PROXY', 'true'],
    ['TRUST_PROXY', '1'],
    ['TRUST_PROXY', '10.0.0.1, proxy.internal'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.0/8/1'],
    ['SIP_ENABLED', 'perhaps'],
    ['SIP_PORT', '65536'],
    ['RTP_PORT_MIN', '10001'],
    ['RTP_PORT_MIN', '80'],
    ['RTP_PORT_MAX', '10000'],
    ['SIP_TLS_PORT', '5061'],
  ];

  for (const [name, value] of cases) {
    it(`${name}=${value.length > 40 ? `${value.slice(0, 10)}…` : value} throws ConfigError naming ${name}`, () => {
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
      const { problems, message } = problemsOf({ [name]: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]!.startsWith(`${name} `)).toBe(true);
      expect(message).toMatch(new RegExp(`\\b${name}\\b`));
    });
  }

  it('reports several bad values at once, each by name', () => {
    const { problems, message } = problemsOf({
      PORT: 'abc',
      LOG_LEVEL: 'loud',
      TRIAL_CREDITS: '-1',
      CARRIER_A_BASE_URL: 'notaurl',
      WORKERS_ENABLED: 'maybe',
      HOST: '0.0.0.0',
    });
    expect(problems).toHaveLength(5);
    for (const name of ['PORT', 'LOG_LEVEL', 'TRIAL_CREDITS', 'CARRIER_A_BASE_URL', 'WORKERS_ENABLED']) {
      expect(
        problems.filter((p) => p.startsWith(`${name} `)),
        name,
      ).toHaveLength(1);
      expect(message).toContain(name);
    }
    expect(message).not.toContain('HOST');
  });

  it('never repeats a secret value in the message', () => {
    const { message: secretMessage } = problemsOf({ SECRET_KEY: 'hunter2-short-secret' });
    expect(secretMessage).toContain('SECRET_KEY');
    expect(secretMessage).not.toContain('hunter2');
    const { message: urlMessage } = problemsOf({ DATABASE_URL: 'mysql://admin:hunter2@db.internal/app' });
    expect(urlMessage).toContain('DATABASE_URL');
    expect(urlMessage).not.toContain('hunter2');
  });
});

describe('production', () => {
  it('requires SECRET_KEY', () => {
    const { problems, message } = problemsOf({ NODE_ENV: 'production' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^SECRET_KEY\b/);
    expect(message).toContain('SECRET_KEY');
  });

  it('treats an empty SECRET_KEY as missing', () => {
    // `SECRET_KEY=` in a .env file must not slip through: it would leave the key undefined, and the
    // server would then generate a file key — exactly what production forbids.
    const { problems } = problemsOf({ NODE_ENV: 'production', SECRET_KEY: '' });
    expect(problems.some((p) => /^SECRET_KEY\b/.test(p))).toBe(true);
  });

  it('refuses a short SECRET_KEY, naming it once', () => {
    const { problems } = problemsOf({ NODE_ENV: 'production', SECRET_KEY: 'short' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^SECRET_KEY\b/);
  });

  it('starts with a good SECRET_KEY', () => {
    const config = loadConfig({ NODE_ENV: 'production', SECRET_KEY: GOOD_SECRET });
    expect(config.env).toBe('production');
    expect(config.secretKey).toBe(GOOD_SECRET);
  });
});

describe('docs/configuration.md', () => {
  it('documents every variable', () => {
    const file = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
    expect(existsSync(file), `${file} must exist`).toBe(true);
    const text = readFileSync(file, 'utf8');
    const names = Object.keys(variables);
    expect(names.length).toBeGreaterThanOrEqual(30);
    const missing = names.filter((name) => !new RegExp(`(?<![A-Z0-9_])${name}(?![A-Z0-9_])`).test(text));
    expect(missing).toEqual([]);
  });
});

describe('resolveSecretKey', () => {
  const directories: string[] = [];
  afterAll(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });
  function tempDataDir(): string {
    const root = mkdtempSync(path.join(tmpdir(), 'switchboard-config-test-'));
    directories.push(root);
    return path.join(root, 'nested', 'data');
  }

  it('generates DATA_DIR/secret.key with mode 0600 once, then keeps using it', () => {
    const dataDir = tempDataDir();
    const config = loadConfig({ DATA_DIR: dataDir });
    const file = path.join(dataDir, 'secret.key');
    expect(existsSync(file)).toBe(false);

    const first = resolveSecretKey(config);
    expect(first.generatedAt).toBe(file);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.secretKey.length).toBeGreaterThanOrEqual(32);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.secretKey);
    // The generated key is one that SECRET_KEY itself would accept.
    expect(loadConfig({ SECRET_KEY: first.secretKey }).secretKey).toBe(first.secretKey);

    const second = resolveSecretKey(loadConfig({ DATA_DIR: dataDir }));
    expect(second.secretKey).toBe(first.secretKey);
    expect(second.generatedAt).toBeUndefined();
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('generates a different key for each data directory', () => {
    const a = resolveSecretKey(loadConfig({ DATA_DIR: tempDataDir() }));
    const b = resolveSecretKey(loadConfig({ DATA_DIR: tempDataDir() }));
    expect(a.secretKey).not.toBe(b.secretKey);
  });

  it('uses SECRET_KEY when set and writes no file', () => {
    const dataDir = tempDataDir();
    const resolved = resolveSecretKey(loadConfig({ DATA_DIR: dataDir, SECRET_KEY: GOOD_SECRET }));
    expect(resolved).toEqual({ secretKey: GOOD_SECRET });
    expect(existsSync(path.join(dataDir, 'secret.key'))).toBe(false);
  });

  it('refuses a secret.key file that is empty or too short instead of signing with it', () => {
    // An empty key (a crash between creating and writing the file) would make every token forgeable.
    for (const content of ['', '\n', 'short\n']) {
      const dataDir = tempDataDir();
      const config = loadConfig({ DATA_DIR: dataDir });
      resolveSecretKey(config);
      writeFileSync(path.join(dataDir, 'secret.key'), content);
      expect(() => resolveSecretKey(config), JSON.stringify(content)).toThrow();
    }
  });
});
