/**
 * The condition language's tokens (expressions.ts gives the overview): numbers, strings, words (names
 * and keywords, in any case) and operators, each with its 0-based position; and ExpressionError, the
 * problem every stage of the language reports. The mistakes users make most ('=' for '==', '&' for
 * '&&') get a message of their own here, where they are first seen.
 */
import type { ExpressionProblem } from './engine-types.js';

/** A parse or validation problem: what is wrong and where (0-based character offset). */
export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }

  get problem(): ExpressionProblem {
    return { message: this.message, position: this.position };
  }
}

export type TokenKind = 'number' | 'string' | 'word' | 'op' | 'end';
export interface Token {
  kind: TokenKind;
  /** The operator or punctuation, the word as written, or the string's decoded value. */
  text: string;
  value?: number;
  position: number;
}

export const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'exists', 'true', 'false', 'null']);
const OPERATORS = [
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '!',
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
];
const WORD_START = /[\p{L}_]/u;
const WORD_PART = /[\p{L}\p{N}\p{M}_]/u;
const NUMBER = /\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch >= '0' && ch <= '9') {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(source)!;
      const end = i + match[0].length;
      if (end < source.length && WORD_PART.test(source[end]!)) {
        throw new ExpressionError(`unexpected '${source[end]}' after the number ${match[0]}`, end);
      }
      tokens.push({ kind: 'number', text: match[0], value: Number(match[0]), position: i });
      i = end;
      continue;
    }
    if (ch === "'" || ch === '"') {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= source.length) throw new ExpressionError('unterminated string', start);
        const c = source[i]!;
        if (c === ch) break;
        if (c === '\\' && i + 1 < source.length) {
          const next = source[i + 1]!;
          value += next === 'n' ? '\n' : next === 't' ? '\t' : next;
          i += 2;
          continue;
        }
        value += c;
        i++;
      }
      i++;
      tokens.push({ kind: 'string', text: value, position: start });
      continue;
    }
    if (WORD_START.test(ch)) {
      const start = i;
      while (i < source.length && WORD_PART.test(source[i]!)) i++;
      tokens.push({ kind: 'word', text: source.slice(start, i), position: start });
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (op) {
      tokens.push({ kind: 'op', text: op, position: i });
      i += op.length;
      continue;
    }
    if (ch === '=') throw new ExpressionError("use '==' to compare, not '='", i);
    if (ch === '&' || ch === '|') throw new ExpressionError(`use '${ch}${ch}' (or 'and' / 'or')`, i);
    throw new ExpressionError(`unexpected character '${ch}'`, i);
  }
  tokens.push({ kind: 'end', text: '', position: source.length });
  return tokens;
}

/** A token as a message names it: "the number 3", "'foo'", "the end of the expression". */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case 'end':
      return 'the end of the expression';
    case 'number':
      return `the number ${token.text}`;
    case 'string':
      return 'a string';
    case 'word':
      return `'${token.text}'`;
    default:
      return `'${token.text}'`;
  }
}
