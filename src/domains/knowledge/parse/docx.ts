/**
 * DOCX: mammoth converts the document to HTML (`convertToHtml` rather than `extractRawText`, because
 * its default style map turns Word's Heading 1–6 into h1–h6, so headings survive as sections, and
 * lists and tables keep their structure), then the HTML path (html.ts) reads it. Images are never
 * decoded: they carry no text and would only cost memory.
 *
 * A DOCX is a zip, and a zip can inflate to far more than it weighs. Before mammoth inflates the XML
 * parts it reads, each one is inflated here as a stream and counted, stopping at the limit: a part's
 * declared size can lie, its inflated bytes cannot.
 */
import type { Readable } from 'node:stream';
import JSZip from 'jszip';
import mammoth from 'mammoth';
import type { ParsedDocument } from '../types.js';
import { DocumentParseError } from './errors.js';
import { htmlToSections } from './html.js';

/** word/document.xml (or any other XML part) inflating past this refuses the document. */
export const MAX_DOCX_XML_BYTES = 50 * 1024 * 1024;

const MAIN_PART = 'word/document.xml';
const damaged = (cause?: unknown) => new DocumentParseError('The DOCX file is damaged', { cause });

export async function parseDocx(
  bytes: Uint8Array,
  limits = { maxXmlBytes: MAX_DOCX_XML_BYTES },
): Promise<ParsedDocument> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes);
  } catch (cause) {
    throw damaged(cause);
  }
  if (!zip.file(MAIN_PART)) {
    throw new DocumentParseError(
      'The file is a zip archive but not a Word document (it has no word/document.xml)',
    );
  }
  const parts = Object.values(zip.files).filter((file) => !file.dir && /\.(xml|rels)$/i.test(file.name));
  for (const part of parts) await checkInflatedSize(part, limits.maxXmlBytes);

  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) },
    );
    html = result.value;
  } catch (cause) {
    throw damaged(cause);
  }
  return { sections: htmlToSections(html) };
}

/** Refuses `part` when its declared or actual inflated size passes `limit` (counted while inflating). */
async function checkInflatedSize(part: JSZip.JSZipObject, limit: number): Promise<void> {
  const tooLarge = () =>
    new DocumentParseError(
      `The DOCX file is too large once unpacked (${part.name} passes ${Math.round(limit / 1024 / 1024)} MB of text)`,
    );
  // jszip keeps the central directory's figure on the entry; not in its types.
  const declared = (part as unknown as { _data?: { uncompressedSize?: number } })._data?.uncompressedSize;
  if (typeof declared === 'number' && declared > limit) throw tooLarge();
  await new Promise<void>((resolve, reject) => {
    let seen = 0;
    const stream = part.nodeStream('nodebuffer') as Readable;
    stream
      .on('data', (chunk: Buffer) => {
        seen += chunk.length;
        // Destroying stops the inflater where it is; nothing more is produced or kept.
        if (seen > limit) stream.destroy(tooLarge());
      })
      .on('error', (cause: Error) => reject(cause instanceof DocumentParseError ? cause : damaged(cause)))
      .on('end', () => resolve());
  });
}
