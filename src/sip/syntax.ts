/**
 * The lexical layer of Switchboard's own SIP stack (RFC 3261 §25): the one error type every SIP
 * parser throws, the character classes, a small cursor (`Scanner`) the structured-value parsers
 * share, list splitting outside quotes and angle brackets, and `;name=value` header parameters.
 *
 * Why our own stack (issue 21's research): the only pure-JS stack that serves UDP and TCP with the
 * RFC 3261 timers, npm `sip`, has been unmaintained since 2019 (last commit 2022); the maintained ones,
 * SIP.js and JsSIP, are WebSocket stacks for browsers without UDP retransmission; drachtio needs a C++
 * server. So we write a small stack of our own, and test it hard (RFC 4475 cases, properties, fuzzing).
 *
 * Design: header values reach these parsers already unfolded (one line), so whitespace here is only
 * SP and HTAB. Every parser works left to right once over its input (no backtracking beyond one
 * token, no regular expression that can blow up), so a hostile value costs time linear in its length.
 * Anything malformed is a `SipParseError` — never another exception type — so a caller needs one catch.
 */

/** Why a message or a value was refused: a short code for logs and counters, with a readable message. */
export type SipParseReason =
  | 'too-large'
  | 'no-message'
  | 'bad-start-line'
  | 'bad-header-line'
  | 'too-many-headers'
  | 'no-header-end'
  | 'bad-content-length'
  | 'body-truncated'
  | 'missing-header'
  | 'repeated-header'
  | 'bad-call-id'
  | 'cseq-method-mismatch'
  | 'bad-request-uri'
  | 'bad-uri'
  | 'bad-name-addr'
  | 'bad-via'
  | 'bad-cseq'
  | 'bad-params'
  | 'bad-auth'
  | 'stream-framing';

export class SipParseError extends Error {
  override readonly name = 'SipParseError';
  constructor(
    readonly reason: SipParseReason,
    message: string,
  ) {
    super(message);
  }
}

/** RFC 3261 `token`: alphanum and `-.!%*_+\`'~`. */
const TOKEN_CHARS = new Uint8Array(128);
for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.!%*_+`'~") {
  TOKEN_CHARS[c.charCodeAt(0)] = 1;
}

export function isTokenChar(code: number): boolean {
  return code < 128 && TOKEN_CHARS[code] === 1;
}

export function isToken(text: string): boolean {
  if (text.length === 0) return false;
  for (let i = 0; i < text.length; i++) if (!isTokenChar(text.charCodeAt(i))) return false;
  return true;
}

export const isWhitespace = (code: number) => code === 0x20 || code === 0x09;

/** Removes SP and HTAB (the only whitespace in SIP's grammar) from both ends. */
export function trimWhitespace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isWhitespace(text.charCodeAt(start))) start++;
  while (end > start && isWhitespace(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/** A cursor over one unfolded header value; `what` names the value in error messages. */
export class Scanner {
  pos = 0;

  constructor(
    readonly text: string,
    readonly reason: SipParseReason,
    readonly what: string,
  ) {}

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  peek(): string {
    return this.text[this.pos] ?? '';
  }

  fail(problem: string): never {
    throw new SipParseError(this.reason, `${this.what}: ${problem} at ${this.pos}`);
  }

  /** Skips SP/HTAB; returns whether any was skipped. */
  skipWhitespace(): boolean {
    const start = this.pos;
    while (this.pos < this.text.length && isWhitespace(this.text.charCodeAt(this.pos))) this.pos++;
    return this.pos > start;
  }

  /** Consumes `char` (after optional whitespace) when it is next; whitespace is kept otherwise. */
  eat(char: string): boolean {
    const start = this.pos;
    this.skipWhitespace();
    if (this.text[this.pos] === char) {
      this.pos++;
      return true;
    }
    this.pos = start;
    return false;
  }

  expect(char: string): void {
    if (!this.eat(char)) this.fail(`expected "${char}"`);
  }

  token(): string {
    const start = this.pos;
    while (this.pos < this.text.length && isTokenChar(this.text.charCodeAt(this.pos))) this.pos++;
    if (this.pos === start) this.fail('expected a token');
    return this.text.slice(start, this.pos);
  }

  /** A quoted-string, returned as written (quotes and escapes kept); `unquote` decodes it. */
  quoted(): string {
    const start = this.pos;
    if (this.text[this.pos] !== '"') this.fail('expected a quoted string');
    this.pos++;
    while (this.pos < this.text.length) {
      const char = this.text[this.pos];
      if (char === '\\') this.pos += 2;
      else if (char === '"') {
        this.pos++;
        return this.text.slice(start, this.pos);
      } else this.pos++;
    }
    return this.fail('unterminated quoted string');
  }

  /** Consumes characters while `accept` holds; may be empty. */
  run(accept: (code: number) => boolean): string {
    const start = this.pos;
    while (this.pos < this.text.length && accept(this.text.charCodeAt(this.pos))) this.pos++;
    return this.text.slice(start, this.pos);
  }

  end(): void {
    this.skipWhitespace();
    if (!this.done) this.fail(`unexpected "${this.peek()}"`);
  }
}

/** Decodes a quoted-string (`"a \"b\""` → `a "b"`); text without quotes is returned unchanged. */
export function unquote(text: string): string {
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return text;
  return text.slice(1, -1).replace(/\\([\s\S])/g, '$1');
}

/** Encodes text as a quoted-string, escaping `"` and `\`. */
export function quote(text: string): string {
  return `"${text.replace(/["\\]/g, (char) => `\\${char}`)}"`;
}

/**
 * Splits a list header's value at commas outside quoted strings and `<…>` (RFC 3261 §7.3.1), trimming
 * each element and dropping empty ones. An unterminated quote or bracket keeps the rest as one
 * element, for the value's own parser to refuse.
 */
export function splitList(value: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let inQuotes = false;
  let inBrackets = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (inQuotes) {
      if (char === '\\') i++;
      else if (char === '"') inQuotes = false;
    } else if (char === '"') inQuotes = true;
    else if (char === '<') inBrackets = true;
    else if (char === '>') inBrackets = false;
    else if (char === ',' && !inBrackets) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts.map(trimWhitespace).filter((part) => part.length > 0);
}

/**
 * Header parameters (`;name=value;flag`) by lower-cased name, in order. Values are kept as written —
 * a quoted value keeps its quotes (`unquote` decodes it) — so a parameter is formatted back exactly;
 * a flag without a value is `null`. The first of repeated names wins.
 */
export type Params = Map<string, string | null>;

/** A generic-param value: a quoted string, or a run of token characters and the `:[]` of IPv6 hosts. */
const isParamValueChar = (code: number) =>
  isTokenChar(code) || code === 0x3a || code === 0x5b || code === 0x5d;

/** Reads `*(SEMI generic-param)` from the cursor on (RFC 3261 §25.1: SEMI and EQUAL allow whitespace). */
export function scanParams(scanner: Scanner): Params {
  const params: Params = new Map();
  while (scanner.eat(';')) {
    scanner.skipWhitespace();
    const name = scanner.token().toLowerCase();
    let value: string | null = null;
    if (scanner.eat('=')) {
      scanner.skipWhitespace();
      value = scanner.peek() === '"' ? scanner.quoted() : scanner.run(isParamValueChar);
      if (value === '') scanner.fail(`empty value of parameter "${name}"`);
    }
    if (!params.has(name)) params.set(name, value);
  }
  return params;
}

/** Parses a whole `;a=b;c` string (what follows a value in Content-Type, Event, Session-Expires…). */
export function parseParams(text: string): Params {
  const scanner = new Scanner(text, 'bad-params', 'parameters');
  const params = scanParams(scanner);
  scanner.end();
  return params;
}

export function formatParams(params: Params): string {
  let out = '';
  for (const [name, value] of params) out += value === null ? `;${name}` : `;${name}=${value}`;
  return out;
}
