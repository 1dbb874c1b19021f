/**
 * Which of the five accepted formats an upload is, decided before its bytes are stored: the name's
 * extension and/or the declared content type say what it claims to be, and the first bytes confirm it
 * (`%PDF-` for a PDF, a zip header for a DOCX, NUL-free UTF-8 for the text formats). A refusal is a
 * sentence for the person who uploaded the file. Pure: the upload route passes the head it has read.
 */
import type { DocumentFormat } from './types.js';

/** The accepted formats, as a phrase for documentation and refusals. */
export const ACCEPTED_FORMATS_TEXT = 'plain text, Markdown, HTML, PDF and DOCX';

/** File-name extensions (lower case, with the dot) and the format each names. */
export const ACCEPTED_EXTENSIONS: Readonly<Record<string, DocumentFormat>> = {
  '.txt': 'text',
  '.text': 'text',
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.html': 'html',
  '.htm': 'html',
  '.pdf': 'pdf',
  '.docx': 'docx',
};

/** Content types (without parameters) and the format each names. */
export const ACCEPTED_CONTENT_TYPES: Readonly<Record<string, DocumentFormat>> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
};

/** How many first bytes detectFormat wants to see (a PDF header may sit anywhere in its first 1,024). */
export const HEAD_BYTES = 4096;

const FORMAT_NAMES: Record<DocumentFormat, string> = {
  text: 'a plain text file',
  markdown: 'a Markdown file',
  html: 'an HTML file',
  pdf: 'a PDF',
  docx: 'a DOCX document',
};

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04]; // PK\x03\x04

/**
 * The format an upload is, or why it is refused. The extension wins over the content type when both
 * name an accepted format (browsers send `text/plain` or `application/octet-stream` for Markdown);
 * the content type decides when the name has no accepted extension.
 */
export function detectFormat({
  fileName,
  contentType,
  head,
}: {
  fileName: string;
  contentType: string;
  /** The file's first bytes (HEAD_BYTES of them, or the whole file when shorter). */
  head: Uint8Array;
}): DocumentFormat | { refused: string } {
  const extension = extensionOf(fileName);
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const byExtension = extension ? ACCEPTED_EXTENSIONS[extension] : undefined;
  const claimed = byExtension ?? ACCEPTED_CONTENT_TYPES[type];
  if (!claimed) {
    const got = [type || 'no content type', fileName ? `(${fileName})` : ''].filter(Boolean).join(' ');
    return { refused: `Only ${ACCEPTED_FORMATS_TEXT} documents are accepted; got ${got}` };
  }
  const said = byExtension ? `named ${extension}` : `sent as ${type}`;
  const problem = contentProblem(claimed, head);
  return problem ? { refused: `The file is ${said} but ${problem}` } : claimed;
}

/** Why the head does not look like `format`, or null when it does. */
function contentProblem(format: DocumentFormat, head: Uint8Array): string | null {
  const isPdf = indexOfBytes(head.subarray(0, 1024), PDF_MAGIC) >= 0;
  const isZip = startsWith(head, ZIP_MAGIC);
  if (format === 'pdf') return isPdf ? null : 'is not a PDF';
  if (format === 'docx') return isZip ? null : 'is not a DOCX document';
  // A text format: a PDF or zip renamed to .txt is binary, whatever its name says.
  if (isPdf && startsWith(head, PDF_MAGIC)) return `is a PDF, not ${FORMAT_NAMES[format]}`;
  if (isZip) return `is a zip archive (a DOCX?), not ${FORMAT_NAMES[format]}`;
  if (head.includes(0)) return `is not text (it holds binary data), not ${FORMAT_NAMES[format]}`;
  if (!isUtf8Prefix(head)) return 'is not UTF-8 text (save it as UTF-8 and upload it again)';
  return null;
}

function extensionOf(fileName: string): string | null {
  const base = fileName.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot > 0 || (dot === 0 && base.length > 1) ? base.slice(dot).toLowerCase() : null;
}

function startsWith(bytes: Uint8Array, magic: number[]): boolean {
  return magic.every((byte, i) => bytes[i] === byte);
}

function indexOfBytes(bytes: Uint8Array, needle: number[]): number {
  outer: for (let i = 0; i + needle.length <= bytes.length; i++) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Whether `head` is valid UTF-8, allowing the one sequence its end may have cut short (the head is
 * only the file's start). Any other invalid sequence refuses, however lone.
 */
function isUtf8Prefix(head: Uint8Array): boolean {
  let end = head.length;
  // Walk back over at most three continuation bytes to the last lead byte; drop it if incomplete.
  for (let back = 1; back <= Math.min(4, head.length); back++) {
    const byte = head[head.length - back]!;
    if ((byte & 0xc0) === 0x80) continue;
    const needs = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    if (needs > back) end = head.length - back;
    break;
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, end));
    return true;
  } catch {
    return false;
  }
}
