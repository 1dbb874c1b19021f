/**
 * A document's bytes to text in reading order, whatever its format (one module per format beside
 * this one). Pure: no database, no storage, no network; the processing job reads the bytes and calls
 * parseDocument. Every failure is a DocumentParseError whose message is for the uploader.
 */
import type { DocumentFormat, ParsedDocument } from '../types.js';
import { parseDocx } from './docx.js';
import { DocumentParseError } from './errors.js';
import { parseHtml } from './html.js';
import { parseMarkdown } from './markdown.js';
import { decodeUtf8 } from './normalise.js';
import { parsePdf } from './pdf.js';
import { parseText } from './text.js';

export { MAX_DOCX_XML_BYTES } from './docx.js';
export { DocumentParseError } from './errors.js';
export { MAX_PDF_PAGES } from './pdf.js';

export async function parseDocument(format: DocumentFormat, bytes: Uint8Array): Promise<ParsedDocument> {
  const document = await parseByFormat(format, bytes);
  if (document.sections.length === 0) throw new DocumentParseError('The document has no text');
  return document;
}

function parseByFormat(format: DocumentFormat, bytes: Uint8Array): ParsedDocument | Promise<ParsedDocument> {
  switch (format) {
    case 'text':
      return parseText(bytes);
    case 'markdown':
      return parseMarkdown(bytes);
    case 'html':
      return parseHtml(decodeUtf8(bytes));
    case 'pdf':
      return parsePdf(bytes);
    case 'docx':
      return parseDocx(bytes);
  }
}
