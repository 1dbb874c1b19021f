/** Phone numbers: E.164 parsing and normalisation (libphonenumber-js). */
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { validE164 } from './phone-validation.js';

/** What a refused phone number is told, wherever one is validated. */
export const NOT_E164_MESSAGE = 'Not a valid E.164 phone number (e.g. +14155552671)';

/** The E.164 form of `input` (`+14155552671`), or undefined when it is not a valid number. */
export function toE164(input: string): string | undefined {
  const trimmed = input.trim();
  if (!/^\+[\d\s().-]+$/.test(trimmed)) return undefined;
  return validE164(trimmed);
}

export function isTollFree(e164: string): boolean {
  return parsePhoneNumberFromString(e164)?.getType() === 'TOLL_FREE';
}
