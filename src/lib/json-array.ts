/**
 * Streaming reader of one large JSON array (`[{…}, {…}, …]`): it finds where each element begins and
 * ends — tracking strings, escapes and nesting — and hands each element's text to `JSON.parse`, so
 * only one element is ever in memory. An element that is not valid JSON on its own comes out as a
 * `JsonElementError` value (the next ones still come); a broken array structure ends the reading
 * with a `JsonArraySyntaxError`.
 */
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export class JsonArraySyntaxError extends Error {
  constructor(
    message: string,
    /** 1-based index of the element being read when the structure broke. */
    readonly element: number,
  ) {
    super(message);
    this.name = 'JsonArraySyntaxError';
  }
}

/** An element whose text is not valid JSON (e.g. a trailing comma inside an object). */
export class JsonElementError {
  constructor(readonly message: string) {}
}

export interface JsonArrayOptions {
  /** The longest element accepted, in characters (default 1 MiB). */
  maxElementLength?: number;
}

/** Each element of the array in `input`, parsed, or a `JsonElementError` for one that does not parse. */
export async function* readJsonArray(
  input: Readable,
  options: JsonArrayOptions = {},
): AsyncGenerator<unknown> {
  const maxLength = options.maxElementLength ?? 1 << 20;
  const decoder = new StringDecoder('utf8');
  // before: ahead of `[`; between: an element (or `]` when none came yet) is next; element: inside
  // one; after: `,` or `]` is next; done: after the closing `]`.
  let state = 'before' as 'before' | 'between' | 'element' | 'after' | 'done';
  let pieces: string[] = [];
  let length = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let count = 0;
  let firstChunk = true;
  const fail = (message: string): never => {
    throw new JsonArraySyntaxError(message, count + 1);
  };
  const finish = (lastPiece: string): unknown => {
    pieces.push(lastPiece);
    const source = pieces.join('');
    pieces = [];
    length = 0;
    count += 1;
    if (source.length > maxLength) fail(`An element is longer than ${maxLength} characters`);
    try {
      return JSON.parse(source);
    } catch (error) {
      return new JsonElementError(error instanceof Error ? error.message : 'Not valid JSON');
    }
  };

  try {
    for await (const chunk of input) {
      let text = decoder.write(chunk as Buffer);
      if (firstChunk && text.length > 0) {
        firstChunk = false;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      const ready: unknown[] = [];
      let start = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text[i]!;
        if (state === 'element') {
          if (inString) {
            if (escaped) escaped = false;
            else if (c === '\\') escaped = true;
            else if (c === '"') inString = false;
          } else if (c === '"') {
            inString = true;
          } else if (c === '{' || c === '[') {
            depth += 1;
          } else if ((c === '}' || c === ']') && depth > 0) {
            depth -= 1;
            if (depth === 0) {
              ready.push(finish(text.slice(start, i + 1)));
              state = 'after';
            }
          } else if (c === '}') {
            fail('Unexpected "}"');
          } else if (depth === 0 && (c === ',' || c === ']')) {
            // The end of a scalar element (a string, number, true, false or null).
            ready.push(finish(text.slice(start, i)));
            state = c === ',' ? 'between' : 'done';
          }
          continue;
        }
        if (c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
        if (state === 'before') {
          if (c !== '[') fail('The file must hold a JSON array of objects ([{…}, {…}])');
          state = 'between';
        } else if (state === 'between') {
          if (c === ']' && count === 0) {
            state = 'done';
          } else if (c === ']' || c === ',' || c === '}') {
            fail(`Unexpected "${c}"`);
          } else {
            state = 'element';
            start = i;
            depth = c === '{' || c === '[' ? 1 : 0;
            inString = c === '"';
            escaped = false;
          }
        } else if (state === 'after') {
          if (c === ',') state = 'between';
          else if (c === ']') state = 'done';
          else fail(`Expected "," or "]" after an element, found "${c}"`);
        } else {
          fail('Unexpected text after the closing "]"');
        }
      }
      if (state === 'element') {
        const rest = text.slice(start);
        length += rest.length;
        if (length > maxLength) fail(`An element is longer than ${maxLength} characters`);
        pieces.push(rest);
      }
      for (const element of ready) yield element;
    }
  } finally {
    input.destroy();
  }
  if (decoder.end().trim() !== '') fail('Unexpected text at the end of the file');
  if (state === 'before') fail('The file is empty: expected a JSON array');
  if (state !== 'done') fail('The file ends inside the array (no closing "]")');
}
