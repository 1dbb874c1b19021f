/**
 * Rate limits count in fixed calendar windows (src/db/rate-windows.ts, one minute for API keys and
 * function listings): a test that makes N requests and expects the N+1th refused must not straddle a
 * window's end, or the count starts again halfway (CI once saw the 11th of 11 listings allowed). The
 * window comes from the database clock; the tests' database runs on this machine, so Date.now agrees.
 */
export async function awayFromMinuteEdge(needMs = 10_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 250));
}
