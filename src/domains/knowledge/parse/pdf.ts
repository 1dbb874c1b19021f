/**
 * PDF: pdf.js (the legacy build, which runs in Node without a browser) reads each page's text layer
 * in content order, in a worker thread of its own (pdf-worker.ts says why); here a line ends where
 * pdf.js says (`hasEOL`) or where the baseline moves, and a gap well over one line's height starts a
 * new paragraph. Each page with text is a section with its `page` (1-based). Scripts are never
 * evaluated and the page count is capped, so a hostile file costs bounded work.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { startWorker } from '../../../lib/worker-thread.js';
import type { ParsedDocument, ParsedSection } from '../types.js';
import { DocumentParseError } from './errors.js';
import { normaliseText } from './normalise.js';
import type { PdfTextItem, PdfWorkerInput, PdfWorkerOutput } from './pdf-protocol.js';

/** More pages than this refuses the document (a 2,000-page manual is already a large one). */
export const MAX_PDF_PAGES = 2000;

// pdf.js reads the 14 standard fonts' metrics from its package (PDFs may use them without embedding).
const STANDARD_FONTS = `${join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'standard_fonts')}/`;

/** A baseline gap above this many line heights reads as a paragraph break. */
const PARAGRAPH_GAP = 1.6;

export async function parsePdf(
  bytes: Uint8Array,
  limits = { maxPages: MAX_PDF_PAGES },
): Promise<ParsedDocument> {
  const output = await readInWorker(bytes, limits.maxPages);
  switch (output.kind) {
    case 'encrypted':
      throw new DocumentParseError('The PDF is encrypted: upload a copy without a password');
    case 'unreadable':
      throw new DocumentParseError('The PDF is damaged: its structure cannot be read');
    case 'damaged-pages':
      throw new DocumentParseError('The PDF is damaged: its pages cannot be read');
    case 'too-many-pages':
      throw new DocumentParseError(
        `The PDF has ${output.pages.toLocaleString('en')} pages; at most ${limits.maxPages.toLocaleString('en')} are accepted (split it into smaller files)`,
      );
  }
  const sections: ParsedSection[] = [];
  for (const { page, items } of output.pages) {
    const text = normaliseText(pageText(items));
    if (text) sections.push({ text, page });
  }
  if (sections.length === 0) throw new DocumentParseError('The PDF has no text layer (a scanned image?)');
  return { sections };
}

/** One worker thread per document: it reads the pages and ends. */
function readInWorker(bytes: Uint8Array, maxPages: number): Promise<PdfWorkerOutput> {
  // A copy, handed over to the worker: pdf.js takes over (detaches) the buffer it is given, and
  // refuses Node's Buffer.
  const copy = new Uint8Array(bytes);
  const input: PdfWorkerInput = { bytes: copy, maxPages, standardFontDataUrl: STANDARD_FONTS };
  const worker = startWorker(import.meta.url, './pdf-worker', input, [copy.buffer]);
  return new Promise((resolve, reject) => {
    let answered = false;
    worker.once('message', (output: PdfWorkerOutput) => {
      answered = true;
      resolve(output);
      void worker.terminate();
    });
    worker.once('error', (error) => reject(new Error('The PDF worker failed', { cause: error })));
    worker.once('exit', (code) => {
      if (!answered) reject(new Error(`The PDF worker ended (exit code ${code}) without an answer`));
    });
  });
}

/** A page's text items as lines and paragraphs. */
function pageText(items: PdfTextItem[]): string {
  const parts: string[] = [];
  let lastY: number | undefined;
  let lastHeight = 0;
  let atLineEnd = false;
  for (const item of items) {
    const y = item.y;
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
