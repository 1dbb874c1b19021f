/**
 * The fast E.164 check (src/lib/phone-validation.ts) against libphonenumber-js itself, the
 * definition it must agree with: every country's example number, altered digit by digit and in
 * length, written nationally and internationally with the punctuation people type, read in its own
 * region, in others and in none; then random strings of the same characters. Also checks that the
 * fast path answers the common shapes itself rather than handing everything to the library.
 */

import fc from 'fast-check';
import examples from 'libphonenumber-js/examples.mobile.json' with { type: 'json' };
import {
  type CountryCode,
  getCountries,
  getCountryCallingCode,
  parsePhoneNumberFromString,
} from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { fastAnswer, LIBRARY, validE164 } from '../src/lib/phone-validation.js';

function library(text: string, region?: CountryCode): string | undefined {
  const parsed = parsePhoneNumberFromString(text, region ? { defaultCountry: region } : undefined);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** A deterministic generator, so a failure names a case that reproduces. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** Ways people write the same digits. */
function writings(digits: string, next: () => number): string[] {
  const groups = digits.match(/.{1,3}/g) ?? [digits];
  const joined = (sep: string) => groups.join(sep);
  const out = [digits, joined(' '), joined('-'), joined('.'), joined('/'), joined('\u00a0')];
  if (digits.length > 4) out.push(`(${digits.slice(0, 3)}) ${digits.slice(3, 6)}-${digits.slice(6)}`);
  // Digits with punctuation at random places, and a trailing or leading bracket.
  let mixed = '';
  for (const d of digits) mixed += d + (next() < 0.3 ? ' ().-/'[Math.floor(next() * 6)] : '');
  out.push(mixed, `(${digits})`, `${digits})`);
  return out;
}

/** Examples altered: a digit changed near each end, one digit more or fewer. */
function variants(national: string, next: () => number): string[] {
  const digit = () => String(Math.floor(next() * 10));
  const at = (i: number) => national.slice(0, i) + digit() + national.slice(i + 1);
  return [
    national,
    at(0),
    at(1),
    at(national.length - 1),
    at(Math.floor(national.length / 2)),
    national + digit(),
    national.slice(0, -1),
    `0${national}`,
    `1${national}`,
  ];
}

const COUNTRIES = getCountries();

describe('validE164 agrees with libphonenumber-js', () => {
  it('on every country’s example numbers, altered and written in many ways, in several regions', () => {
    const next = random(1);
    let cases = 0;
    let answeredHere = 0;
    for (const country of COUNTRIES) {
      const example = (examples as Record<string, string>)[country];
      if (!example) continue;
      const code = getCountryCallingCode(country);
      const other = COUNTRIES[Math.floor(next() * COUNTRIES.length)]!;
      for (const national of variants(example, next)) {
        for (const written of writings(national, next)) {
          const inputs: Array<[string, CountryCode | undefined]> = [
            [written, country],
            [written, 'US'],
            [written, other],
            [`+${code}${written}`, undefined],
            [`+${code} ${written}`, 'GB'],
            [`+${code}${national}`, undefined],
          ];
          for (const [text, region] of inputs) {
            cases++;
            const fast = fastAnswer(text, region);
            if (fast !== LIBRARY) answeredHere++;
            expect([text, region, validE164(text, region)]).toEqual([text, region, library(text, region)]);
          }
        }
      }
    }
    expect(cases).toBeGreaterThan(100_000);
    // The point of the fast path: most of these are answered without the library.
    expect(answeredHere / cases).toBeGreaterThan(0.85);
  });

  it('answers national US numbers and international numbers of the common shapes itself', () => {
    for (const [text, region] of [
      ['(201) 555-0123', 'US'],
      ['201.555.0123', 'US'],
      ['+1 416 555 0123', undefined],
      ['+44 7400 123456', undefined],
      ['+33 6 12 34 56 78', 'US'],
      ['+49 1512 3456789', undefined],
    ] as const) {
      expect(fastAnswer(text, region), text).not.toBe(LIBRARY);
      expect(validE164(text, region)).toBe(library(text, region));
      expect(validE164(text, region)).toMatch(/^\+\d+$/);
    }
    // A national prefix, an IDD prefix, a country code without +: the library's own path.
    expect(fastAnswer('07400 123456', 'GB')).toBe(LIBRARY);
    expect(fastAnswer('011 44 7400 123456', 'US')).toBe(LIBRARY);
    expect(fastAnswer('1 201 555 0123', 'US')).toBe(LIBRARY);
    expect(validE164('07400 123456', 'GB')).toBe('+447400123456');
    expect(validE164('011 44 7400 123456', 'US')).toBe('+447400123456');
  });

  it('on random strings of digits, spaces, brackets, dots, dashes, slashes and a leading +', () => {
    const regions = [
      'US',
      'GB',
      'CA',
      'DE',
      'FR',
      'IN',
      'BR',
      'AR',
      'RU',
      'KZ',
      'IT',
      'VA',
      'NO',
      'AU',
      'MX',
    ] as const;
    const text = fc
      .tuple(
        fc.boolean(),
        fc.array(fc.constantFrom(...'0123456789012345678901234567890123456789 ().-/\u00a0\t'), {
          maxLength: 22,
        }),
        fc.constantFrom('', '1', '44', '7', '39', '262', '590', '599', '358', '61', '212', '800', '882'),
      )
      .map(([plus, chars, code]) => `${plus ? '+' : ''}${plus ? code : ''}${chars.join('')}`);
    fc.assert(
      fc.property(text, fc.option(fc.constantFrom(...regions), { nil: undefined }), (input, region) => {
        expect(validE164(input, region)).toBe(library(input, region));
      }),
      { numRuns: 20_000, seed: 7 },
    );
  });

  it('refuses what the library refuses: empty text, letters, a + alone, too long', () => {
    for (const text of [
      '',
      '   ',
      '+',
      '+0 201 555 0123',
      'call me',
      '2'.repeat(251),
      '+1 201 555 0123 ext 5',
    ]) {
      expect(validE164(text, 'US')).toBe(library(text, 'US'));
    }
    expect(validE164('+1 201 555 0123 ext 5', 'US')).toBe(library('+1 201 555 0123 ext 5', 'US'));
  });
});
