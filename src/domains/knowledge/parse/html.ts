/**
 * HTML to sections: html-to-text renders the readable text (scripts, styles, navigation and images
 * dropped; links as their words; no line wrapping), and each heading h1–h6 starts a section that
 * carries it as `heading`. The heading is also the first line of its section's text: it is part of
 * the reading order, and a passage found by a heading's words must contain them. Markdown and DOCX
 * come through here too (rendered to HTML first), so every format with headings splits the same way.
 */
import { convert, type FormatCallback, type SelectorDefinition } from 'html-to-text';
import type { ParsedDocument, ParsedSection } from '../types.js';
import { normaliseText } from './normalise.js';

// html-to-text drops private-use characters, so headings are marked with the ASCII record and unit
// separators; they cannot appear in HTML text (they are stripped from the input first).
const OPEN = '\u001e';
const CLOSE = '\u001f';
// biome-ignore lint/suspicious/noControlCharactersInRegex: the markers are control characters on purpose
const MARKED_HEADING = /\u001e([^\u001e\u001f]*)\u001f/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the markers are control characters on purpose
const MARKERS_IN_INPUT = /[\u001e\u001f]|&#(?:x0*1[ef]|0*3[01]);/gi;

const SKIPPED = ['script', 'style', 'noscript', 'template', 'nav', 'svg', 'iframe', 'object', 'img', 'head'];

const SELECTORS: SelectorDefinition[] = [
  ...SKIPPED.map((selector) => ({ selector, format: 'skip' })),
  { selector: 'a', options: { ignoreHref: true } },
  { selector: 'ul', options: { itemPrefix: '- ' } },
  // Columns separated by spaces (collapsed later); header cells kept as written, not upper-cased.
  {
    selector: 'table',
    format: 'dataTable',
    options: { uppercaseHeaderCells: false, maxColumnWidth: 10_000 },
  },
  ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, format: 'markedHeading' })),
];

const markedHeading: FormatCallback = (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(OPEN);
  walk(elem.children, builder);
  builder.addLiteral(CLOSE);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

/** The readable text of an HTML document, split into sections at its headings. */
export function htmlToSections(html: string): ParsedSection[] {
  const text = convert(html.replace(MARKERS_IN_INPUT, ''), {
    wordwrap: false,
    selectors: SELECTORS,
    formatters: { markedHeading },
  });
  const sections: ParsedSection[] = [];
  let heading: string | undefined;
  let from = 0;
  const close = (end: number) => {
    const body = normaliseText(text.slice(from, end));
    // A heading followed at once by another heading has no text of its own: it makes no section.
    if (!body) return;
    sections.push(heading ? { text: `${heading}\n\n${body}`, heading } : { text: body });
  };
  for (const match of text.matchAll(MARKED_HEADING)) {
    close(match.index);
    heading = normaliseText(match[1]!).replace(/\n/g, ' ') || undefined;
    from = match.index + match[0].length;
  }
  close(text.length);
  return sections;
}

export function parseHtml(text: string): ParsedDocument {
  return { sections: htmlToSections(text) };
}
