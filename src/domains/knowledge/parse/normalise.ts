/**
 * The text every parser hands on is normalised the same way, so chunking and search see one shape:
 * `\n` line ends, single spaces, no invisible characters, at most one blank line between paragraphs.
 * Each step is one linear regular-expression pass (documents run to megabytes).
 */
import { DocumentParseError } from './errors.js';

// Control characters, soft hyphens and zero-width marks carry no words. (ZWJ/ZWNJ stay: scripts need them.)
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const INVISIBLE = /[\u0000-\u0008\u000e-\u001f\u007f\u00ad\u200b\u2060\ufeff]/g;

/** Normalised text: lines trimmed, runs of spaces collapsed, paragraphs separated by one blank line. */
export function normaliseText(raw: string): string {
  return (
    raw
      .replace(/\r\n?|[\u2028\u2029\v\f]/g, '\n')
      // Tabs and the Unicode spaces (NBSP among them) read as one space.
      .replace(/[\t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/g, ' ')
      .replace(INVISIBLE, '')
      .replace(/ {2,}/g, ' ')
      .replace(/ ?\n ?/g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/** The bytes as UTF-8 text (a byte-order mark dropped); an invalid sequence anywhere refuses. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (cause) {
    throw new DocumentParseError(
      'The document is not valid UTF-8 text (save it as UTF-8 and upload it again)',
      {
        cause,
      },
    );
  }
}
