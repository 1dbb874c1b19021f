/** Made-up secrets for tests that store them and then look for leaks. */

let serial = 0;

/** A fresh, long, recognisable secret whose last 4 characters are unique in the run. */
export function secret(label = 'key'): string {
  serial += 1;
  return `sk-${label}-${Math.random().toString(36).slice(2, 10)}-${String(1000 + serial)}`;
}

/** How the API shows a stored secret: `****` and its last 4 characters. */
export const masked = (value: string) => `****${value.slice(-4)}`;
