/**
 * Resolves the server's SECRET_KEY. Outside production a missing key is generated once into
 * DATA_DIR/secret.key (mode 0600) so that a local install needs no set-up and keeps its tokens and
 * encrypted credentials valid across restarts.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { randomToken } from './crypto.js';

export interface ResolvedSecretKey {
  secretKey: string;
  /** Set when the key was generated just now, so the caller can say so in the log. */
  generatedAt?: string;
}

export function resolveSecretKey(config: Config): ResolvedSecretKey {
  if (config.secretKey) return { secretKey: config.secretKey };
  const file = path.join(config.dataDir, 'secret.key');
  if (existsSync(file)) return { secretKey: readFileSync(file, 'utf8').trim() };
  mkdirSync(config.dataDir, { recursive: true });
  const secretKey = randomToken(48);
  writeFileSync(file, `${secretKey}\n`, { mode: 0o600, flag: 'wx' });
  return { secretKey, generatedAt: file };
}
