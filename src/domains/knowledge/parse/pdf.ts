/**
 * PDF: pdf.js (the legacy build, which runs in Node without a browser) reads each page's text layer
 * in content order; a line ends where pdf.js says (`hasEOL`) or where the baseline moves, and a gap
 * well over one line's height starts a new paragraph. Each page with text is a section with its
 * `page` (1-based). Scripts are never evaluated (`isEvalSupported: false`) and the page count is
 * capped, so a hostile file costs bounded work.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import type { ParsedDocument, ParsedSection } from '../types.js';
import { DocumentParseError } from './errors.js';
import { normaliseText } from './normalise.js';

/** More pages than this refuses the document (a 2,000-page manual is already a large one). */
export const MAX_PDF_PAGES = 2000;

// pdf.js reads the 14 standard fonts' metrics from its package (PDFs may use them without embedding).
const STANDARD_FONTS = `${join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

/** A baseline gap above this many line heights reads as a paragraph break. */
const PARAGRAPH_GAP = 1.6;

type TextItemLike = Pick<TextItem, 'str' | 'hasEOL' | 'transform' | 'height'>;

export async function parsePdf(
  bytes: Uint8Array,
  limits = { maxPages: MAX_PDF_PAGES },
): Promise<ParsedDocument> {
  const task = getDocument({
    // A copy: pdf.js may take over (detach) the buffer it is given, and refuses Node's Buffer.
    data: new Uint8Array(bytes),
    standardFontDataUrl: STANDARD_FONTS,
    isEvalSupported: false,
    verbosity: 0,
    disableFontFace: true,
    useSystemFonts: false,
  });
  let pdf: Awaited<typeof task.promise>;
  try {
    pdf = await task.promise;
  } catch (cause) {
    await task.destroy();
    throw openError(cause);
  }
  try {
    if (pdf.numPages > limits.maxPages) {
      throw new DocumentParseError(
        `The PDF has ${pdf.numPages.toLocaleString('en')} pages; at most ${limits.maxPages.toLocaleString('en')} are accepted (split it into smaller files)`,
      );
    }
    const sections: ParsedSection[] = [];
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      page.cleanup();
      const text = normaliseText(pageText(content.items.filter((item): item is TextItem => 'str' in item)));
      if (text) sections.push({ text, page: number });
    }
    if (sections.length === 0) throw new DocumentParseError('The PDF has no text layer (a scanned image?)');
    return { sections };
  } catch (cause) {
    if (cause instanceof DocumentParseError) throw cause;
    throw new DocumentParseError('The PDF is damaged: its pages cannot be read', { cause });
  } finally {
    await pdf.destroy();
  }
}

/** A page's text items as lines and paragraphs. */
function pageText(items: TextItemLike[]): string {
  const parts: string[] = [];
  let lastY: number | undefined;
  let lastHeight = 0;
  let atLineEnd = false;
  for (const item of items) {
    const y = item.transform[5] ?? 0;
    const height = Math.max(item.height, lastHeight, 1);
    if (lastY !== undefined && Math.abs(lastY - y) > height * 0.5) {
      parts.push(Math.abs(lastY - y) > height * PARAGRAPH_GAP ? '\n\n' : atLineEnd ? '' : '\n');
    }
    parts.push(item.str);
    atLineEnd = item.hasEOL;
    if (item.hasEOL) parts.push('\n');
    if (item.str || item.hasEOL) {
      lastY = y;
      lastHeight = item.height;
    }
  }
  return parts.join('');
}

function openError(cause: unknown): DocumentParseError {
  const name = cause instanceof Error ? cause.name : '';
  if (name === 'PasswordException') {
    return new DocumentParseError('The PDF is encrypted: upload a copy without a password', { cause });
  }
  return new DocumentParseError('The PDF is damaged: its structure cannot be read', { cause });
}
