/**
 * Markdown: marked's lexer reads the document (GitHub-flavoured: tables, fenced code), its parser
 * renders the tokens to HTML, and the HTML path (html.ts) turns that into sections per heading with
 * the markup gone — one way of reading headings, lists, tables and entities for every format. A YAML
 * front-matter block is metadata, not prose: it is dropped rather than read as a heading.
 */
import { marked } from 'marked';
import type { ParsedDocument } from '../types.js';
import { htmlToSections } from './html.js';
import { decodeUtf8 } from './normalise.js';

const FRONT_MATTER = /^---[ \t]*\r?\n[\s\S]*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

export function parseMarkdown(bytes: Uint8Array): ParsedDocument {
  const source = decodeUtf8(bytes)
    .replace(/^\ufeff/, '')
    .replace(FRONT_MATTER, '');
  const html = marked.parser(marked.lexer(source, { gfm: true }), { gfm: true });
  return { sections: htmlToSections(html) };
}
