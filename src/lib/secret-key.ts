/**
 * Resolves the server's SECRET_KEY. Outside production a missing key is generated once into
 * DATA_DIR/secret.key (mode 0600) so that a local install needs no set-up and keeps its tokens and
 * encrypted credentials valid across restarts.
 */
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
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
  if (existsSync(file)) return { secretKey: readKeyFile(file) };
  mkdirSync(config.dataDir, { recursive: true });
  // Written whole under a temporary name, then linked into place: a crash never leaves a partial
  // key file, and of two processes racing here exactly one key wins.
  const secretKey = randomToken(48);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${secretKey}\n`, { mode: 0o600 });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { secretKey: readKeyFile(file) };
  } finally {
    unlinkSync(temporary);
  }
  return { secretKey, generatedAt: file };
}

function readKeyFile(file: string): string {
  const key = readFileSync(file, 'utf8').trim();
  if (key.length < 32) {
    throw new Error(`${file} holds no usable key (fewer than 32 characters). Delete it or set SECRET_KEY.`);
  }
  return key;
}
