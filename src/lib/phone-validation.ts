/**
 * Phone number validation with libphonenumber-js's answers at a fraction of its cost.
 *
 * `validE164(text, region)` answers exactly what
 * `parsePhoneNumberFromString(text, { defaultCountry: region })?.isValid() ? .number : undefined`
 * answers — the library stays the definition, and the property test (test/phone-validation.test.ts)
 * compares the two on every country's example numbers, altered and reformatted. Why a second path:
 * the library builds a `RegExp` from a metadata pattern of up to several kilobytes on every check
 * (a US number costs six of them), so a contact import spent most of its own CPU there. Here each
 * pattern is compiled once per numbering plan and kept.
 *
 * Only the common shapes take this path: text of digits, spaces, `( ) . - /` and a leading `+`,
 * whose digits need no national prefix, IDD prefix or calling code stripped, in a geographic
 * calling code. Everything else (Argentina's prefix rules, `011 44 …` dialled from the US,
 * `1 415 …` with the country code but no `+`, letters, other scripts' digits) is handed to the
 * library unchanged, so the answers agree by construction where they are not computed here.
 */
import {
  type CountryCode,
  isSupportedCountry,
  Metadata,
  parsePhoneNumberFromString,
} from 'libphonenumber-js/max';

/** The E.164 form of `text` (read in `region` unless it has a `+`), or undefined when it is not valid. */
export function validE164(text: string, region?: CountryCode): string | undefined {
  const answer = fastAnswer(text, region);
  if (answer !== LIBRARY) return answer;
  const parsed = parsePhoneNumberFromString(text, region ? { defaultCountry: region } : undefined);
  return parsed?.isValid() ? parsed.number : undefined;
}

/** Returned by the fast path for a shape it leaves to the library. */
export const LIBRARY: unique symbol = Symbol('ask libphonenumber');

/** The only characters the fast path reads; punctuation as the library's own list has it. */
const FAST_SHAPE = /^\+?[\d\s().\-/]*$/;
const PUNCTUATION_OR_DIGIT = /^[\d ().\-/\u00a0\u3000]*$/;
/** The library refuses longer input outright (its MAX_INPUT_STRING_LENGTH). */
const MAX_INPUT = 250;
/** Its bounds on a national significant number (MIN_LENGTH_FOR_NSN, MAX_LENGTH_FOR_NSN). */
const MIN_NATIONAL = 2;
const MAX_NATIONAL = 17;

/**
 * The library's parse and validity check, step for step, for the shapes described above: its
 * number extraction and viability rule, calling code, country by leading digits or number type,
 * length bounds, and the number types' patterns. Exported for the property test, which also checks
 * that it answers the common shapes itself.
 */
export function fastAnswer(
  text: string,
  region: CountryCode | undefined,
): string | undefined | typeof LIBRARY {
  if (!FAST_SHAPE.test(text)) return LIBRARY;
  if (text.length > MAX_INPUT) return undefined;

  // The number runs from its first `+` or digit to its last digit.
  const start = text.search(/[+\d]/);
  if (start < 0) return undefined;
  const formatted = text.slice(start).replace(/\D+$/, '');
  const plus = formatted.startsWith('+');
  const body = plus ? formatted.slice(1) : formatted;
  const digits = body.replace(/\D/g, '');
  // Viable: two digits alone, or three or more among the library's punctuation.
  const viable = /^\d{2}$/.test(formatted) || (digits.length >= 3 && PUNCTUATION_OR_DIGIT.test(body));
  if (!viable) return undefined;

  let callingCode: string;
  let rest: string;
  let plan: Plan;
  let country: string | undefined;
  if (plus) {
    if (digits.startsWith('0')) return undefined;
    const code = callingCodeAtStart(digits);
    if (code === undefined) return undefined;
    if (countriesOf(code) === undefined) return LIBRARY; // non-geographic (+800, +882 …)
    callingCode = code;
    rest = digits.slice(code.length);
    if (rest === '') return undefined;
    plan = planOf(code);
  } else {
    // The library reads a number without `+` in the default region, unless it does not know it.
    const defaultCountry = region && isSupportedCountry(region) ? region : undefined;
    if (!defaultCountry) return undefined;
    plan = planOf(defaultCountry);
    if (plan.iddPrefix && (plan.iddPrefix.exec(digits)?.[0].length ?? 0) > 0) return LIBRARY;
    if (digits.startsWith(plan.callingCode)) return LIBRARY;
    callingCode = plan.callingCode;
    rest = digits;
    country = defaultCountry;
  }
  if (plan.nationalPrefix?.test(rest)) return LIBRARY;

  const exact = countryByNationalNumber(callingCode, rest);
  if (exact) country = exact;
  if (rest.length < MIN_NATIONAL || rest.length > MAX_NATIONAL) return undefined;

  const validity = planOf(country ?? callingCode);
  const valid = validity.hasTypes ? hasType(rest, validity) : validity.nationalNumber.test(rest);
  return valid ? `+${callingCode}${rest}` : undefined;
}

/** A numbering plan's patterns, compiled once. */
interface Plan {
  callingCode: string;
  nationalNumber: RegExp;
  hasTypes: boolean;
  /** Fixed line first, then the library's order of other types; those with a pattern only. */
  types: Array<{ pattern: RegExp; lengths: number[] | undefined }>;
  /** A national prefix the library would try to strip (`^(?:…)`). */
  nationalPrefix: RegExp | undefined;
  iddPrefix: RegExp | undefined;
  leadingDigits: RegExp | undefined;
}

/** The runtime surface of libphonenumber-js's Metadata that its typings leave out. */
interface RuntimeMetadata {
  selectNumberingPlan(countryOrCallingCode: string): void;
  numberingPlan: RuntimePlan;
  getCountryCodesForCallingCode(callingCode: string): string[] | undefined;
  hasCallingCode(callingCode: string): boolean;
}
interface RuntimePlan {
  callingCode(): string;
  nationalNumberPattern(): string;
  possibleLengths(): number[] | undefined;
  nationalPrefixForParsing(): string | undefined;
  IDDPrefix(): string | undefined;
  leadingDigits(): string | undefined;
  hasTypes(): boolean;
  type(name: string): { pattern(): string; possibleLengths(): number[] | undefined } | undefined;
}

const TYPES = [
  'FIXED_LINE',
  'MOBILE',
  'PREMIUM_RATE',
  'TOLL_FREE',
  'SHARED_COST',
  'VOIP',
  'PERSONAL_NUMBER',
  'PAGER',
  'UAN',
  'VOICEMAIL',
];

const metadata = new Metadata() as unknown as RuntimeMetadata;
const plans = new Map<string, Plan>();

/** The plan of a country, or of a calling code's main country. */
function planOf(countryOrCallingCode: string): Plan {
  let plan = plans.get(countryOrCallingCode);
  if (!plan) {
    metadata.selectNumberingPlan(countryOrCallingCode);
    const p = metadata.numberingPlan;
    const prefix = (pattern: string | undefined) => (pattern ? new RegExp(`^(?:${pattern})`) : undefined);
    const types: Plan['types'] = [];
    for (const name of TYPES) {
      const type = p.type(name);
      const pattern = type?.pattern();
      if (type && pattern) types.push({ pattern: whole(pattern), lengths: type.possibleLengths() });
    }
    plan = {
      callingCode: p.callingCode(),
      nationalNumber: whole(p.nationalNumberPattern()),
      hasTypes: p.hasTypes(),
      types,
      nationalPrefix: prefix(p.nationalPrefixForParsing()),
      iddPrefix: prefix(p.IDDPrefix()),
      leadingDigits: prefix(p.leadingDigits()),
    };
    plans.set(countryOrCallingCode, plan);
  }
  return plan;
}

function whole(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`);
}

/** The calling code the digits start with (one to three digits), as the library finds it. */
function callingCodeAtStart(digits: string): string | undefined {
  for (let length = 1; length <= 3 && length <= digits.length; length++) {
    const code = digits.slice(0, length);
    if (metadata.hasCallingCode(code)) return code;
  }
  return undefined;
}

const countriesByCode = new Map<string, string[] | undefined>();
function countriesOf(callingCode: string): string[] | undefined {
  if (!countriesByCode.has(callingCode))
    countriesByCode.set(callingCode, metadata.getCountryCodesForCallingCode(callingCode));
  return countriesByCode.get(callingCode);
}

/** Which country of a shared calling code the number belongs to: leading digits, else a number type. */
function countryByNationalNumber(callingCode: string, nationalNumber: string): string | undefined {
  const countries = countriesOf(callingCode);
  if (!countries) return undefined;
  if (countries.length === 1) return countries[0];
  for (const country of countries) {
    const plan = planOf(country);
    if (plan.leadingDigits) {
      if (nationalNumber && plan.leadingDigits.test(nationalNumber)) return country;
    } else if (hasType(nationalNumber, plan)) return country;
  }
  return undefined;
}

/** Whether the library would give the number a type in this plan (which is what makes it valid). */
function hasType(nationalNumber: string, plan: Plan): boolean {
  if (!plan.nationalNumber.test(nationalNumber)) return false;
  return plan.types.some(
    (type) =>
      (type.lengths === undefined || type.lengths.includes(nationalNumber.length)) &&
      type.pattern.test(nationalNumber),
  );
}
