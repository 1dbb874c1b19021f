/**
 * Knowledge documents from bytes to text: which format an upload is (or why it is refused), and each
 * format parsed to sections in reading order with their headings or pages; each parse failure with
 * its message for people. Pure modules: no database.
 */
import { describe, expect, it } from 'vitest';
import { detectFormat } from '../src/domains/knowledge/formats.js';
import { parseDocx } from '../src/domains/knowledge/parse/docx.js';
import { DocumentParseError, parseDocument } from '../src/domains/knowledge/parse/index.js';
import { parsePdf } from '../src/domains/knowledge/parse/pdf.js';
import {
  brokenPdf,
  damagedDocx,
  docxFile,
  encryptedPdf,
  htmlFile,
  markdownFile,
  pdfFile,
  pdfWithoutText,
  sampleFile,
  textFile,
  zipNotDocx,
} from './support/knowledge-files.js';

const PDF_HEAD = new TextEncoder().encode('%PDF-1.7\n');
const ZIP_HEAD = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00]);
const TEXT_HEAD = new TextEncoder().encode('Hello, wörld');

describe('detectFormat', () => {
  const accepted: Array<[string, string, Uint8Array, string]> = [
    ['notes.txt', 'text/plain', TEXT_HEAD, 'text'],
    ['notes.text', '', TEXT_HEAD, 'text'],
    ['README.md', 'text/markdown', TEXT_HEAD, 'markdown'],
    ['guide.markdown', 'application/octet-stream', TEXT_HEAD, 'markdown'],
    // Browsers send Markdown as text/plain: the extension decides.
    ['guide.md', 'text/plain; charset=utf-8', TEXT_HEAD, 'markdown'],
    ['page.html', 'text/html', TEXT_HEAD, 'html'],
    ['page.HTM', '', TEXT_HEAD, 'html'],
    ['manual.pdf', 'application/pdf', PDF_HEAD, 'pdf'],
    ['MANUAL.PDF', 'application/octet-stream', PDF_HEAD, 'pdf'],
    [
      'letter.docx',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      ZIP_HEAD,
      'docx',
    ],
    // Without an accepted extension, the content type decides.
    ['upload', 'application/pdf', PDF_HEAD, 'pdf'],
    ['blob', 'TEXT/HTML; charset=UTF-8', TEXT_HEAD, 'html'],
    ['blob', 'text/markdown', TEXT_HEAD, 'markdown'],
    ['scan.bin', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', ZIP_HEAD, 'docx'],
    // A PDF header may follow some junk within the first 1,024 bytes.
    ['old.pdf', 'application/pdf', new TextEncoder().encode('\r\n\r\n%PDF-1.4'), 'pdf'],
    // An empty text file is a text file (parsing then says it has no text).
    ['empty.txt', 'text/plain', new Uint8Array(0), 'text'],
  ];
  it.each(accepted)('accepts %s sent as "%s"', (fileName, contentType, head, format) => {
    expect(detectFormat({ fileName, contentType, head })).toBe(format);
  });

  it('accepts a head that ends inside a multi-byte character (the head is only the start)', () => {
    const bytes = new TextEncoder().encode('prix: 5 €');
    const head = bytes.subarray(0, bytes.length - 1);
    expect(detectFormat({ fileName: 'a.txt', contentType: 'text/plain', head })).toBe('text');
  });

  const refused: Array<[string, string, Uint8Array, string]> = [
    [
      'logo.png',
      'image/png',
      new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
      'Only plain text, Markdown, HTML, PDF and DOCX documents are accepted; got image/png (logo.png)',
    ],
    [
      'data.bin',
      '',
      TEXT_HEAD,
      'Only plain text, Markdown, HTML, PDF and DOCX documents are accepted; got no content type (data.bin)',
    ],
    [
      'report.doc',
      'application/msword',
      TEXT_HEAD,
      'Only plain text, Markdown, HTML, PDF and DOCX documents are accepted; got application/msword (report.doc)',
    ],
    ['manual.pdf', 'application/pdf', TEXT_HEAD, 'The file is named .pdf but is not a PDF'],
    [
      'letter.docx',
      'application/octet-stream',
      PDF_HEAD,
      'The file is named .docx but is not a DOCX document',
    ],
    ['upload', 'application/pdf', ZIP_HEAD, 'The file is sent as application/pdf but is not a PDF'],
    ['notes.txt', 'text/plain', PDF_HEAD, 'The file is named .txt but is a PDF, not a plain text file'],
    [
      'notes.md',
      'text/markdown',
      ZIP_HEAD,
      'The file is named .md but is a zip archive (a DOCX?), not a Markdown file',
    ],
    [
      'page.html',
      'text/html',
      new Uint8Array([0x3c, 0x68, 0x00, 0x31]),
      'The file is named .html but is not text (it holds binary data), not an HTML file',
    ],
    // UTF-16 text has NUL bytes: refused as binary rather than read as garbage.
    [
      'notes.txt',
      'text/plain',
      new Uint8Array([0xff, 0xfe, 0x48, 0x00]),
      'The file is named .txt but is not text',
    ],
    // One lone invalid byte in the middle refuses.
    [
      'notes.txt',
      'text/plain',
      new Uint8Array([0x61, 0x62, 0xe9, 0x63, 0x64]),
      'The file is named .txt but is not UTF-8 text (save it as UTF-8 and upload it again)',
    ],
  ];
  it.each(refused)('refuses %s sent as "%s"', (fileName, contentType, head, reason) => {
    const result = detectFormat({ fileName, contentType, head });
    expect(result).toEqual({ refused: expect.stringContaining(reason) });
  });
});

describe('parseDocument: each format to sections', () => {
  it('reads plain text as one section, normalising line ends, spaces and blank lines', async () => {
    const text =
      '\ufeffFirst\u00a0 line\t here  \r\nsecond line\r\n\r\n\r\n\r\n  Next\u200b paragraph.  \n\n\n';
    const doc = await parseDocument('text', textFile(text));
    expect(doc).toEqual({ sections: [{ text: 'First line here\nsecond line\n\nNext paragraph.' }] });
  });

  it('reads Markdown as sections per heading, without markup, front matter dropped', async () => {
    const markdown = [
      '---',
      'title: Help centre',
      '---',
      'Welcome to **our** help.',
      '',
      '# Refunds',
      '',
      'Refunds take _five_ days. See [the policy](https://example.com/policy) &amp; `terms`.',
      '',
      '- by card',
      '- by bank',
      '',
      '## Opening hours',
      '',
      '| Day | Hours |',
      '| --- | --- |',
      '| Monday | 9-17 |',
      '',
      '```',
      'code stays',
      '```',
    ].join('\n');
    const doc = await parseDocument('markdown', markdownFile(markdown));
    expect(doc.sections).toEqual([
      { text: 'Welcome to our help.' },
      {
        heading: 'Refunds',
        text: 'Refunds\n\nRefunds take five days. See the policy & terms.\n\n- by card\n- by bank',
      },
      { heading: 'Opening hours', text: 'Opening hours\n\nDay Hours\nMonday 9-17\n\ncode stays' },
    ]);
  });

  it('reads HTML as sections per heading, dropping scripts, styles, navigation and images', async () => {
    const body = [
      '<nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>',
      '<style>p { color: red }</style><script>alert("no")</script>',
      '<p>Intro&nbsp;text &amp; more.</p>',
      '<h2>Shipping <em>abroad</em></h2><p>We ship <a href="https://x.test">worldwide</a>.</p><img src="map.png" alt="map">',
      '<h3>Empty</h3><h3>Costs</h3><ul><li>Europe: 5</li><li>Elsewhere: 9</li></ul>',
    ].join('');
    const doc = await parseDocument('html', htmlFile(body));
    expect(doc.sections).toEqual([
      { text: 'Intro text & more.' },
      { heading: 'Shipping abroad', text: 'Shipping abroad\n\nWe ship worldwide.' },
      { heading: 'Costs', text: 'Costs\n\n- Europe: 5\n- Elsewhere: 9' },
    ]);
  });

  it('reads a PDF as one section per page with text, paragraphs at vertical gaps', async () => {
    const bytes = await pdfFile([
      ['Returns policy', 'Items can be returned', 'within thirty days.', '', 'Keep the receipt.'],
      [],
      ['Page three has the warranty.'],
    ]);
    const doc = await parseDocument('pdf', bytes);
    expect(doc.sections).toEqual([
      { page: 1, text: 'Returns policy\nItems can be returned\nwithin thirty days.\n\nKeep the receipt.' },
      { page: 3, text: 'Page three has the warranty.' },
    ]);
  });

  it("reads a PDF in a worker thread, leaving this thread's built-ins as they were", async () => {
    // pdf.js's legacy build replaces Array.prototype.push and JSON.stringify with slower polyfills
    // where it loads: that must not be the thread that serves the API and the calls.
    const before = [Array.prototype.push, JSON.stringify, Array.prototype.at];
    const doc = await parseDocument('pdf', await pdfFile([['Built-ins stay native.']]));
    expect(doc.sections).toEqual([{ page: 1, text: 'Built-ins stay native.' }]);
    expect([Array.prototype.push, JSON.stringify, Array.prototype.at]).toEqual(before);
    // The marks core-js and pdf.js leave on a thread they loaded in (checked on the old, main-thread
    // parser: both were there from this file's first import).
    expect(Object.hasOwn(globalThis, '__core-js_shared__')).toBe(false);
    expect(Object.hasOwn(globalThis, 'pdfjsLib')).toBe(false);
  });

  it('reads a DOCX with its Word headings as sections', async () => {
    const bytes = await docxFile([
      'Before any heading.',
      { heading: 'Warranty' },
      'Two years on parts & labour.',
      { heading: 'Claims', level: 2 },
      'Write to <claims@example.com>.',
      'Include the serial number.',
    ]);
    const doc = await parseDocument('docx', bytes);
    expect(doc.sections).toEqual([
      { text: 'Before any heading.' },
      { heading: 'Warranty', text: 'Warranty\n\nTwo years on parts & labour.' },
      { heading: 'Claims', text: 'Claims\n\nWrite to <claims@example.com>.\n\nInclude the serial number.' },
    ]);
  });

  it.each(['text', 'markdown', 'html', 'pdf', 'docx'] as const)(
    'reads the %s sample builder',
    async (format) => {
      const file = await sampleFile(format, 'Refunds', ['Refunds take five days.']);
      const doc = await parseDocument(format, file.bytes);
      expect(doc.sections.map((section) => section.text)).toEqual(['Refunds\n\nRefunds take five days.']);
      expect(detectFormat({ fileName: file.fileName, contentType: file.contentType, head: file.bytes })).toBe(
        format,
      );
    },
  );
});

describe('parseDocument: failures, in words for people', () => {
  const fails = async (promise: Promise<unknown>, message: string | RegExp) => {
    const error = await promise.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(DocumentParseError);
    if (typeof message === 'string') expect((error as Error).message).toBe(message);
    else expect((error as Error).message).toMatch(message);
  };

  it('refuses an encrypted PDF', async () => {
    await fails(
      parseDocument('pdf', await encryptedPdf()),
      'The PDF is encrypted: upload a copy without a password',
    );
  });

  it('refuses a broken PDF', async () => {
    await fails(parseDocument('pdf', brokenPdf()), 'The PDF is damaged: its structure cannot be read');
  });

  it('refuses a PDF without a text layer', async () => {
    await fails(
      parseDocument('pdf', await pdfWithoutText(2)),
      'The PDF has no text layer (a scanned image?)',
    );
  });

  it('refuses a PDF with more pages than the cap', async () => {
    const bytes = await pdfFile([['one'], ['two'], ['three']]);
    await fails(
      parsePdf(bytes, { maxPages: 2 }),
      'The PDF has 3 pages; at most 2 are accepted (split it into smaller files)',
    );
    await expect(parsePdf(bytes, { maxPages: 3 })).resolves.toMatchObject({
      sections: [{ page: 1 }, {}, {}],
    });
  });

  it('refuses a damaged DOCX and a zip that is not a Word document', async () => {
    await fails(parseDocument('docx', damagedDocx()), 'The DOCX file is damaged');
    await fails(parseDocument('docx', await zipNotDocx()), /not a Word document/);
  });

  it('refuses a DOCX whose XML inflates past the limit (a zip bomb)', async () => {
    // Highly compressible: ~40 kB of text packs into a few hundred bytes.
    const bytes = await docxFile(Array.from({ length: 400 }, () => 'a'.repeat(100)));
    expect(bytes.length).toBeLessThan(4000);
    await fails(
      parseDocx(bytes, { maxXmlBytes: 20_000 }),
      /^The DOCX file is too large once unpacked \(word\/document\.xml/,
    );
    await expect(parseDocx(bytes, { maxXmlBytes: 100_000 })).resolves.toMatchObject({ sections: [{}] });
  });

  it('refuses text that is not UTF-8 past the head detectFormat saw', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('fine so far '), 0xc3, 0x28]);
    for (const format of ['text', 'markdown', 'html'] as const) {
      await fails(
        parseDocument(format, bytes),
        'The document is not valid UTF-8 text (save it as UTF-8 and upload it again)',
      );
    }
  });

  it('refuses documents with no text', async () => {
    const noText = 'The document has no text';
    await fails(parseDocument('text', textFile(' \r\n\t\u00a0\n')), noText);
    await fails(parseDocument('markdown', markdownFile('---\ntitle: x\n---\n\n')), noText);
    await fails(parseDocument('html', htmlFile('<script>var a = 1;</script><img src="a.png">')), noText);
    await fails(parseDocument('docx', await docxFile([])), noText);
  });
});
