/**
 * The PDF worker thread: opens one document with pdf.js, reads each page's text layer and posts the
 * items back (pdf-protocol.ts), then ends. pdf.js runs here rather than on the main thread because
 * its legacy build (the one that runs in Node 20) installs core-js polyfills over built-ins when it
 * loads — `Array.prototype.push` 3× and `JSON.stringify` 5× slower for the whole process — and
 * because a large document would otherwise hold the event loop that serves live calls.
 * Scripts are never evaluated (`isEvalSupported: false`), and the page count is checked before any
 * page is read, so a hostile file costs bounded work.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import type { PdfTextItem, PdfWorkerInput, PdfWorkerOutput } from './pdf-protocol.js';

async function read(input: PdfWorkerInput): Promise<PdfWorkerOutput> {
  // Loaded here, by a dynamic import: this file runs as CommonJS under tsx, and pdf.js is a module.
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = getDocument({
    data: input.bytes,
    standardFontDataUrl: input.standardFontDataUrl,
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
    return {
      kind: cause instanceof Error && cause.name === 'PasswordException' ? 'encrypted' : 'unreadable',
    };
  }
  try {
    if (pdf.numPages > input.maxPages) return { kind: 'too-many-pages', pages: pdf.numPages };
    const pages: Array<{ page: number; items: PdfTextItem[] }> = [];
    for (let number = 1; number <= pdf.numPages; number++) {
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      page.cleanup();
      const items = content.items
        .filter((item): item is TextItem => 'str' in item)
        .map((item) => ({
          str: item.str,
          hasEOL: item.hasEOL,
          y: item.transform[5] ?? 0,
          height: item.height,
        }));
      pages.push({ page: number, items });
    }
    return { kind: 'pages', pages };
  } catch {
    return { kind: 'damaged-pages' };
  } finally {
    await pdf.destroy();
  }
}

void read(workerData as PdfWorkerInput).then((output) => parentPort!.postMessage(output));
