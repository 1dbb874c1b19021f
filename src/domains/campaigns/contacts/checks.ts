/**
 * Checking one contact: the phone number normalised to E.164 in a default region, the other fields
 * trimmed and bounded, custom fields named and typed. Both ways of writing an import (row by row, or
 * COPY into a staging table on a server) check every row here, so they refuse the same rows with the
 * same messages.
 */
import type { CountryCode } from 'libphonenumber-js';
import { isSupportedCountry } from 'libphonenumber-js/max';
import { validE164 } from '../../../lib/phone-validation.js';
import { invalidField } from '../../errors.js';
import { MAX_CUSTOM_KEY_LENGTH, type RawContact } from './files.js';
import type { NewContact } from './store.js';

export const LIMITS = {
  name: 200,
  company: 200,
  email: 254,
  phoneText: 64,
  customFields: 50,
  customKey: MAX_CUSTOM_KEY_LENGTH,
  customValue: 2000,
} as const;

/**
 * `input` as an E.164 number, read in `region` unless it has a country code; also `14155552671`
 * style numbers whose `+` a spreadsheet dropped. Undefined when it is not a valid number.
 */
export function normalisePhone(input: string, region: CountryCode): string | undefined {
  const text = input.trim();
  if (!/^\+?[\d\s().\-/]+$/.test(text)) return undefined;
  const inRegion = validE164(text, region);
  if (inRegion) return inRegion;
  const digits = text.replace(/\D/g, '');
  if (!text.startsWith('+') && digits.length >= 8 && digits.length <= 15) return validE164(`+${digits}`);
  return undefined;
}

/** The region code of a request, or a 422 naming `loc`. */
export function regionOf(value: string | undefined, fallback: CountryCode, loc: string[]): CountryCode {
  if (value === undefined || value.trim() === '') return fallback;
  const region = value.trim().toUpperCase();
  if (!isSupportedCountry(region))
    throw invalidField(loc, `"${value}" is not a region code (two letters, such as US or GB)`);
  return region;
}

/** Checks and normalises one row; the message of the first problem found when it cannot be a contact. */
export function toContact(raw: RawContact, region: CountryCode): { contact: NewContact } | { error: string } {
  if (raw.problem) return { error: raw.problem };
  const phoneText = text(raw.phone);
  if (typeof phoneText === 'object') return { error: `phone_number ${phoneText.problem}` };
  if (phoneText === undefined) return { error: 'Missing phone number' };
  const phoneNumber = phoneText.length <= LIMITS.phoneText ? normalisePhone(phoneText, region) : undefined;
  if (!phoneNumber) return { error: `Invalid phone number "${clip(phoneText)}" (default region ${region})` };

  const fields: Record<'name' | 'firstName' | 'lastName' | 'email' | 'company', string | undefined> = {
    name: undefined,
    firstName: undefined,
    lastName: undefined,
    email: undefined,
    company: undefined,
  };
  for (const key of Object.keys(fields) as Array<keyof typeof fields>) {
    const value = text(raw[key]);
    if (typeof value === 'object') return { error: `${FIELD_NAMES[key]} ${value.problem}` };
    fields[key] = value;
  }
  const name = fields.name ?? ([fields.firstName, fields.lastName].filter(Boolean).join(' ') || undefined);
  if (name !== undefined && name.length > LIMITS.name)
    return { error: `name is longer than ${LIMITS.name} characters` };
  if (fields.company !== undefined && fields.company.length > LIMITS.company)
    return { error: `company is longer than ${LIMITS.company} characters` };
  const email = fields.email;
  if (email !== undefined && (email.length > LIMITS.email || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)))
    return { error: `Invalid email address "${clip(email)}"` };

  const customFields: Record<string, string | number | boolean> = {};
  // First and last names stay available to templates (`{{first_name}}`) beside the whole name.
  if (fields.firstName !== undefined) customFields.first_name = fields.firstName;
  if (fields.lastName !== undefined) customFields.last_name = fields.lastName;
  for (const [rawKey, rawValue] of raw.custom) {
    const key = clean(rawKey).trim();
    if (key === '' || key.length > LIMITS.customKey)
      return { error: `A custom field name must have 1 to ${LIMITS.customKey} characters` };
    const value = customValue(rawValue);
    if (typeof value === 'object') return { error: `Custom field "${clip(key)}" ${value.problem}` };
    if (value !== undefined) customFields[key] = value;
  }
  if (Object.keys(customFields).length > LIMITS.customFields)
    return { error: `More than ${LIMITS.customFields} custom fields` };
  return {
    contact: {
      phoneNumber,
      name: name ?? null,
      email: email ?? null,
      company: fields.company ?? null,
      customFields,
    },
  };
}

const FIELD_NAMES = {
  name: 'name',
  firstName: 'first_name',
  lastName: 'last_name',
  email: 'email',
  company: 'company',
} as const;

/** Text of a standard field: trimmed, empty as absent; numbers are taken as their digits. */
function text(value: unknown): string | undefined | { problem: string } {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return { problem: 'must be text' };
  const trimmed = clean(value).trim();
  return trimmed === '' ? undefined : trimmed;
}

function customValue(value: unknown): string | number | boolean | undefined | { problem: string } {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return value;
  if (typeof value !== 'string') return { problem: 'must be text, a number or true/false' };
  const trimmed = clean(value).trim();
  if (trimmed.length > LIMITS.customValue)
    return { problem: `is longer than ${LIMITS.customValue} characters` };
  return trimmed === '' ? undefined : trimmed;
}

/** Any surrogate code unit: paired ones are fine, but a text without any needs no look at pairs. */
const SURROGATE = /[\uD800-\uDFFF]/;

/**
 * Without NUL characters and lone surrogates, which PostgreSQL text cannot hold. Most texts have
 * neither, and are answered as they are without building a copy (every field of every row comes here).
 */
function clean(value: string): string {
  if (!value.includes('\u0000') && !SURROGATE.test(value)) return value;
  return value.replaceAll('\u0000', '').replace(/\p{Cs}/gu, '\uFFFD');
}

function clip(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}
