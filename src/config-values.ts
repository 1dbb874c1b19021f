/**
 * How the configuration reads a variable: the declaration (default, description, parser) and the
 * parsers, each refusing a bad value with a message that says what it must be. `config.ts` declares
 * the variables with these and is still the only reader of the environment.
 */
import { isIP } from 'node:net';
import { type CountryCode, isSupportedCountry } from 'libphonenumber-js';

export type Parser<T> = (raw: string) => T;

export class InvalidValue extends Error {}

export interface Variable<T> {
  /** Human-readable default for the documentation; `undefined` means "not set". */
  readonly default: string | undefined;
  readonly description: string;
  readonly parse: Parser<T>;
}

export function variable<T>(
  defaultValue: string | undefined,
  description: string,
  parse: Parser<T>,
): Variable<T> {
  return { default: defaultValue, description, parse };
}

export const text: Parser<string> = (raw) => raw;

export function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new InvalidValue(`must be an integer, got "${raw}"`);
    const value = Number(raw);
    if (value < min || value > max) throw new InvalidValue(`must be between ${min} and ${max}, got ${value}`);
    return value;
  };
}

export function decimal(min: number): Parser<number> {
  return (raw) => {
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value))
      throw new InvalidValue(`must be a number, got "${raw}"`);
    if (value < min) throw new InvalidValue(`must be at least ${min}, got ${value}`);
    return value;
  };
}

export const boolean: Parser<boolean> = (raw) => {
  const normalized = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(normalized)) return true;
  if (['0', 'false', 'no', 'off'].includes(normalized)) return false;
  throw new InvalidValue(`must be true or false, got "${raw}"`);
};

export function oneOf<const T extends string>(values: readonly T[]): Parser<T> {
  return (raw) => {
    if ((values as readonly string[]).includes(raw)) return raw as T;
    throw new InvalidValue(`must be one of ${values.join(', ')}, got "${raw}"`);
  };
}

export function url(protocols: readonly string[]): Parser<string> {
  return (raw) => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new InvalidValue('must be an absolute URL');
    }
    if (!protocols.includes(parsed.protocol)) {
      throw new InvalidValue(`must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
    }
    return raw.replace(/\/+$/, '');
  };
}

export const httpUrl = url(['http:', 'https:']);

/** An ISO 3166-1 alpha-2 region the phone number library knows (`US`, `GB`…), upper-cased. */
export const phoneRegion: Parser<CountryCode> = (raw) => {
  const region = raw.trim().toUpperCase();
  if (!isSupportedCountry(region))
    throw new InvalidValue(`must be a two-letter region code such as US, got "${raw}"`);
  return region;
};

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Fastify's `trustProxy` as the proxies' own addresses. Neither `true` (trust every hop: any client
 * could name itself in X-Forwarded-For and dodge per-address limits) nor a hop count (Fastify 5
 * ignores one, as it cannot check the nearest peer) is offered.
 */
export const trustedProxies: Parser<string[]> = (raw) => {
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.includes(entry)) continue;
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const prefixOk =
      prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new InvalidValue(
        `must be comma-separated addresses or CIDR ranges (or ${PROXY_RANGE_NAMES.join(', ')}), got "${entry}"`,
      );
    }
  }
  return entries;
};

export const secretKey: Parser<string> = (raw) => {
  if (raw.length < 32) throw new InvalidValue('must be at least 32 characters long');
  return raw;
};
