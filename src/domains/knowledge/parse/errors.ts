/**
 * The one failure parsing has: the document cannot be read as text. Its message is written for the
 * person who uploaded it (processing records it on the document as its `error`), so it says what is
 * wrong with the file, never what the code was doing. A leaf module, so every parser may throw it.
 */
export class DocumentParseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DocumentParseError';
  }
}
