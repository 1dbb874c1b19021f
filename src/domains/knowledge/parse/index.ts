/**
 * A document's bytes to text in reading order, whatever its format (one module per format beside
 * this one). Pure: no database, no storage, no network; the processing job reads the bytes and calls
 * parseDocument. Every failure is a DocumentParseError whose message is for the uploader.
 *
 * The modules of the formats that need a library (html-to-text, marked, mammoth with its zip) are
 * loaded when a document of theirs first arrives: they are a tenth of what the platform loads at
 * start-up, and a process that never parses such a document need not pay for them.
 */
import type { DocumentFormat, ParsedDocument } from '../types.js';
import { DocumentParseError } from './errors.js';
import { decodeUtf8 } from './normalise.js';
import { parsePdf } from './pdf.js';
import { parseText } from './text.js';

export { DocumentParseError } from './errors.js';

export async function parseDocument(format: DocumentFormat, bytes: Uint8Array): Promise<ParsedDocument> {
  const document = await parseByFormat(format, bytes);
  if (document.sections.length === 0) throw new DocumentParseError('The document has no text');
  return document;
}

async function parseByFormat(format: DocumentFormat, bytes: Uint8Array): Promise<ParsedDocument> {
  switch (format) {
    case 'text':
      return parseText(bytes);
    case 'markdown':
      return (await import('./markdown.js')).parseMarkdown(bytes);
    case 'html':
      return (await import('./html.js')).parseHtml(decodeUtf8(bytes));
    case 'pdf':
      return parsePdf(bytes);
    case 'docx':
      return (await import('./docx.js')).parseDocx(bytes);
  }
}
