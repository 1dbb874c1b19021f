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
