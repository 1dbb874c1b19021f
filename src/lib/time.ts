/** Time helpers shared by the domains. */

/** Whether `zone` is an IANA time zone name this runtime knows (e.g. `Europe/Paris`). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `instant` lies in the years 0001–9999 (UTC): what a timestamp column, JavaScript's `Date`
 * and a four-digit ISO 8601 year all hold. Request formats are bounded the same way (http/bounds.ts).
 */
export function isStorableInstant(instant: Date): boolean {
  const year = instant.getUTCFullYear();
  return year >= 1 && year <= 9999;
}
