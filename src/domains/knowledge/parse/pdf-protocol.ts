/** What parsePdf (pdf.ts) and its worker thread (pdf-worker.ts) tell each other. */

export interface PdfWorkerInput {
  /** The file; its buffer is handed over to the worker (transferred, not copied). */
  bytes: Uint8Array;
  maxPages: number;
  /** Where pdf.js reads the 14 standard fonts' metrics (a directory URL ending in /). */
  standardFontDataUrl: string;
}

/** One text item of a page's text layer, as far as reading order needs it. */
export interface PdfTextItem {
  str: string;
  hasEOL: boolean;
  /** The baseline's vertical position (the item's transform[5]). */
  y: number;
  height: number;
}

export type PdfWorkerOutput =
  | { kind: 'pages'; pages: Array<{ page: number; items: PdfTextItem[] }> }
  /** The document could not be opened: encrypted (a password), or its structure is unreadable. */
  | { kind: 'encrypted' }
  | { kind: 'unreadable' }
  | { kind: 'too-many-pages'; pages: number }
  /** Opened, but a page could not be read. */
  | { kind: 'damaged-pages' };
