/**
 * Knowledge-base documents built in memory, one builder per format, for parsing and upload tests.
 * Each returns the file's bytes; `sampleFile` also gives a name and content type ready for a
 * multipart upload. PDFs are drawn with pdf-lib's standard Helvetica (Latin text only), DOCX files
 * are written with jszip as a minimal valid package (content types, relationships, styles with
 * Heading 1–6, the document). The broken ones pass format detection and fail parsing.
 */
import JSZip from 'jszip';
import { PDFDocument, PDFHexString, PDFName, StandardFonts } from 'pdf-lib';
import type { DocumentFormat } from '../../src/domains/knowledge/types.js';

const utf8 = (text: string) => new TextEncoder().encode(text);

/** A UTF-8 plain text file. */
export function textFile(text: string): Uint8Array {
  return utf8(text);
}

/** A UTF-8 Markdown file. */
export function markdownFile(markdown: string): Uint8Array {
  return utf8(markdown);
}

/** A UTF-8 HTML page around `body` (markup, used as given), titled `title`. */
export function htmlFile(body: string, title = 'Document'): Uint8Array {
  return utf8(
    `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`,
  );
}

/**
 * A PDF with one page per entry; each page is its lines, top to bottom. An empty string leaves a
 * blank line (the parser reads the gap as a paragraph break). Lines are not wrapped: keep them
 * short, and under ~50 per page. A page with no lines has no text.
 */
export async function pdfFile(pages: string[][]): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = doc.addPage([612, 792]);
    let y = 750;
    for (const line of lines) {
      if (line) page.drawText(line, { x: 50, y, size: 11, font });
      y -= 14;
    }
  }
  return doc.save();
}

/** A PDF whose pages hold only drawings: what a scan without OCR looks like to a text reader. */
export async function pdfWithoutText(pageCount = 1): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  for (let i = 0; i < pageCount; i++) {
    doc.addPage([612, 792]).drawRectangle({ x: 50, y: 50, width: 200, height: 300 });
  }
  return doc.save();
}

/**
 * A PDF that asks for a password: its trailer names the standard security handler with owner and
 * user keys that no empty password matches, so a reader must refuse it as encrypted.
 */
export async function encryptedPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  doc.addPage([612, 792]);
  const { context } = doc;
  const key = (byte: string) => PDFHexString.of(byte.repeat(32));
  const encrypt = context.obj({ Filter: 'Standard', V: 1, R: 2, Length: 40, P: -4 });
  encrypt.set(PDFName.of('O'), key('7a'));
  encrypt.set(PDFName.of('U'), key('3c'));
  context.trailerInfo.Encrypt = context.register(encrypt);
  context.trailerInfo.ID = context.obj([PDFHexString.of('01'.repeat(16)), PDFHexString.of('01'.repeat(16))]);
  return doc.save({ useObjectStreams: false });
}

/** Starts like a PDF, then is not one. */
export function brokenPdf(): Uint8Array {
  return utf8('%PDF-1.7\n%\u00e2\u00e3\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n');
}

/** A paragraph of a DOCX: plain text, or a heading of a level (1 by default). */
export type DocxParagraph = string | { heading: string; level?: 1 | 2 | 3 | 4 | 5 | 6 };

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const XML_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A DOCX of paragraphs and headings (Word's Heading 1–6 styles), in order. */
export async function docxFile(paragraphs: DocxParagraph[]): Promise<Uint8Array> {
  const body = paragraphs
    .map((paragraph) => {
      const text = typeof paragraph === 'string' ? paragraph : paragraph.heading;
      const style =
        typeof paragraph === 'string'
          ? ''
          : `<w:pPr><w:pStyle w:val="Heading${paragraph.level ?? 1}"/></w:pPr>`;
      return `<w:p>${style}<w:r><w:t xml:space="preserve">${escapeXml(text)}</w:t></w:r></w:p>`;
    })
    .join('');
  return docxPackage(`${XML_HEAD}<w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`);
}

/** A DOCX package around the given word/document.xml (for tests that need odd documents). */
export async function docxPackage(documentXml: string): Promise<Uint8Array> {
  const zip = new JSZip();
  zip.file(
    '[Content_Types].xml',
    `${XML_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
      '<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>' +
      '</Types>',
  );
  zip.file(
    '_rels/.rels',
    `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
      `<Relationship Id="rId1" Type="${REL}/officeDocument" Target="word/document.xml"/></Relationships>`,
  );
  zip.file(
    'word/_rels/document.xml.rels',
    `${XML_HEAD}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
      `<Relationship Id="rId1" Type="${REL}/styles" Target="styles.xml"/></Relationships>`,
  );
  const headingStyles = [1, 2, 3, 4, 5, 6]
    .map(
      (level) =>
        `<w:style w:type="paragraph" w:styleId="Heading${level}"><w:name w:val="heading ${level}"/></w:style>`,
    )
    .join('');
  zip.file('word/styles.xml', `${XML_HEAD}<w:styles xmlns:w="${W}">${headingStyles}</w:styles>`);
  zip.file('word/document.xml', documentXml);
  return zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE' });
}

/** Starts like a zip (so like a DOCX), then is not one. */
export function damagedDocx(): Uint8Array {
  return utf8('PK\u0003\u0004 this zip was cut short and cannot be opened');
}

/** A valid zip that is not a Word document (no word/document.xml). */
export async function zipNotDocx(): Promise<Uint8Array> {
  const zip = new JSZip();
  zip.file('notes.txt', 'not a Word document');
  return zip.generateAsync({ type: 'uint8array' });
}

export const CONTENT_TYPES: Record<DocumentFormat, string> = {
  text: 'text/plain',
  markdown: 'text/markdown',
  html: 'text/html',
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};

const EXTENSIONS: Record<DocumentFormat, string> = {
  text: 'txt',
  markdown: 'md',
  html: 'html',
  pdf: 'pdf',
  docx: 'docx',
};

/**
 * A small document of `format` holding `heading` and then `paragraphs` (short lines: a PDF draws
 * each on its own line), with a file name and content type for an upload: `refunds.pdf`, …
 */
export async function sampleFile(
  format: DocumentFormat,
  heading: string,
  paragraphs: string[],
  baseName = 'document',
): Promise<{ fileName: string; contentType: string; bytes: Uint8Array }> {
  const bytes = await sampleBytes(format, heading, paragraphs);
  return { fileName: `${baseName}.${EXTENSIONS[format]}`, contentType: CONTENT_TYPES[format], bytes };
}

function sampleBytes(
  format: DocumentFormat,
  heading: string,
  paragraphs: string[],
): Uint8Array | Promise<Uint8Array> {
  switch (format) {
    case 'text':
      return textFile([heading, ...paragraphs].join('\n\n'));
    case 'markdown':
      return markdownFile([`# ${heading}`, ...paragraphs].join('\n\n'));
    case 'html':
      return htmlFile(
        `<h1>${escapeXml(heading)}</h1>${paragraphs.map((p) => `<p>${escapeXml(p)}</p>`).join('')}`,
      );
    case 'pdf':
      return pdfFile([[heading, '', ...paragraphs.flatMap((p) => [p, ''])]]);
    case 'docx':
      return docxFile([{ heading }, ...paragraphs]);
  }
}
