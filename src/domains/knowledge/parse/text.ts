/** Plain text: UTF-8, normalised, one section (plain text has no pages or headings to tell). */
import type { ParsedDocument } from '../types.js';
import { decodeUtf8, normaliseText } from './normalise.js';

export function parseText(bytes: Uint8Array): ParsedDocument {
  const text = normaliseText(decodeUtf8(bytes));
  return { sections: text ? [{ text }] : [] };
}
