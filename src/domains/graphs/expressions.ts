/**
 * The condition language of `mathematical` and `state_variable` edges (docs/graphs.md, "Conditions").
 *
 * A hand-written recursive-descent parser: the language is our own (keyword operators `and`/`or`/`not`/
 * `in`, a postfix `exists`, lists only after `in`), and a generic JavaScript-expression parser would
 * bring process-wide operator tables plus a dozen node kinds (calls, `this`, computed members) that we
 * would have to reject again. Nothing here uses `eval` or `Function`; names resolve only through own
 * properties of plain data objects.
 *
 *   or      := and (('or' | '||') and)*
 *   and     := not (('and' | '&&') not)*
 *   not     := ('not' | '!') not | compare
 *   compare := sum [('==' | '!=' | '<' | '<=' | '>' | '>=') sum | ['not'] 'in' (list | sum)]
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/' | '%') unary)*
 *   unary   := '-' unary | postfix
 *   postfix := primary ['exists']
 *   primary := number | string | 'true' | 'false' | 'null' | name | 'exists' '(' name ')' | '(' or ')'
 *   list    := '[' [sum (',' sum)* [',']] ']'
 *   name    := word ('.' word)*
 */

import type { ExpressionProblem } from './engine-types.js';

export const MAX_EXPRESSION_LENGTH = 500;
/** Nesting of parentheses, lists and unary operators. */
export const MAX_EXPRESSION_DEPTH = 32;

export type ExpressionKind = 'mathematical' | 'state_variable';
export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=';
export type ArithmeticOp = '+' | '-' | '*' | '/' | '%';

export type Expr =
  | { type: 'literal'; value: number | string | boolean | null; position: number }
  | { type: 'name'; path: string[]; position: number }
  | { type: 'negate'; operand: Expr; position: number }
  | { type: 'not'; operand: Expr; position: number }
  | { type: 'arithmetic'; op: ArithmeticOp; left: Expr; right: Expr; position: number }
  | { type: 'compare'; op: CompareOp; left: Expr; right: Expr; position: number }
  | { type: 'logical'; op: 'and' | 'or'; left: Expr; right: Expr; position: number }
  | { type: 'in'; negated: boolean; item: Expr; collection: Expr | ListExpr; position: number }
  | { type: 'exists'; path: string[]; position: number };

export interface ListExpr {
  type: 'list';
  items: Expr[];
  position: number;
}

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

// ---------------------------------------------------------------------------------------------------
// Tokens

type TokenKind = 'number' | 'string' | 'word' | 'op' | 'end';
interface Token {
  kind: TokenKind;
  /** The operator or punctuation, the word as written, or the string's decoded value. */
  text: string;
  value?: number;
  position: number;
}

const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'exists', 'true', 'false', 'null']);
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

function tokenize(source: string): Token[] {
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

// ---------------------------------------------------------------------------------------------------
// Parser

const COMPARE_OPS = new Set<string>(['==', '!=', '<', '<=', '>', '>=']);

class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): Expr {
    const expr = this.parseOr();
    const token = this.peek();
    if (token.kind !== 'end') {
      throw new ExpressionError(
        `unexpected ${describe(token)}; expected an operator or the end`,
        token.position,
      );
    }
    return expr;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== 'end') this.index++;
    return token;
  }

  private isOp(text: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.kind === 'op' && token.text === text;
  }

  private isKeyword(word: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.kind === 'word' && token.text.toLowerCase() === word;
  }

  private expectOp(text: string, what: string): Token {
    const token = this.peek();
    if (token.kind !== 'op' || token.text !== text) {
      throw new ExpressionError(`expected '${text}' ${what}, found ${describe(token)}`, token.position);
    }
    return this.next();
  }

  private enter(position: number): void {
    if (++this.depth > MAX_EXPRESSION_DEPTH) {
      throw new ExpressionError(
        `expression is nested too deeply (more than ${MAX_EXPRESSION_DEPTH} levels)`,
        position,
      );
    }
  }

  private leave(): void {
    this.depth--;
  }

  private parseOr(): Expr {
    let left = this.parseAnd();
    while (this.isKeyword('or') || this.isOp('||')) {
      const op = this.next();
      left = { type: 'logical', op: 'or', left, right: this.parseAnd(), position: op.position };
    }
    return left;
  }

  private parseAnd(): Expr {
    let left = this.parseNot();
    while (this.isKeyword('and') || this.isOp('&&')) {
      const op = this.next();
      left = { type: 'logical', op: 'and', left, right: this.parseNot(), position: op.position };
    }
    return left;
  }

  private parseNot(): Expr {
    if ((this.isKeyword('not') && !this.isKeyword('in', 1)) || this.isOp('!')) {
      const op = this.next();
      this.enter(op.position);
      const operand = this.parseNot();
      this.leave();
      return { type: 'not', operand, position: op.position };
    }
    return this.parseCompare();
  }

  private parseCompare(): Expr {
    const left = this.parseSum();
    const result = this.parseCompareTail(left);
    if (result !== left) {
      const token = this.peek();
      if (
        (token.kind === 'op' && COMPARE_OPS.has(token.text)) ||
        this.isKeyword('in') ||
        (this.isKeyword('not') && this.isKeyword('in', 1))
      ) {
        throw new ExpressionError("comparisons cannot be chained; join them with 'and'", token.position);
      }
    }
    return result;
  }

  private parseCompareTail(left: Expr): Expr {
    const token = this.peek();
    if (token.kind === 'op' && COMPARE_OPS.has(token.text)) {
      this.next();
      return {
        type: 'compare',
        op: token.text as CompareOp,
        left,
        right: this.parseSum(),
        position: token.position,
      };
    }
    const negated = this.isKeyword('not') && this.isKeyword('in', 1);
    if (negated || this.isKeyword('in')) {
      if (negated) this.next();
      this.next();
      const collection = this.isOp('[') ? this.parseList() : this.parseSum();
      return { type: 'in', negated, item: left, collection, position: token.position };
    }
    return left;
  }

  private parseList(): ListExpr {
    const open = this.expectOp('[', 'to open a list');
    this.enter(open.position);
    const items: Expr[] = [];
    while (!this.isOp(']')) {
      items.push(this.parseSum());
      if (this.isOp(',')) this.next();
      else if (!this.isOp(']')) {
        const token = this.peek();
        throw new ExpressionError(
          `expected ',' or ']' in the list, found ${describe(token)}`,
          token.position,
        );
      }
    }
    this.next();
    this.leave();
    return { type: 'list', items, position: open.position };
  }

  private parseSum(): Expr {
    let left = this.parseProduct();
    while (this.isOp('+') || this.isOp('-')) {
      const op = this.next();
      left = {
        type: 'arithmetic',
        op: op.text as ArithmeticOp,
        left,
        right: this.parseProduct(),
        position: op.position,
      };
    }
    return left;
  }

  private parseProduct(): Expr {
    let left = this.parseUnary();
    while (this.isOp('*') || this.isOp('/') || this.isOp('%')) {
      const op = this.next();
      left = {
        type: 'arithmetic',
        op: op.text as ArithmeticOp,
        left,
        right: this.parseUnary(),
        position: op.position,
      };
    }
    return left;
  }

  private parseUnary(): Expr {
    if (this.isOp('-')) {
      const op = this.next();
      this.enter(op.position);
      const operand = this.parseUnary();
      this.leave();
      // `-5` stays a literal (state_variable conditions allow negative numbers, not arithmetic).
      if (operand.type === 'literal' && typeof operand.value === 'number') {
        return { type: 'literal', value: -operand.value, position: op.position };
      }
      return { type: 'negate', operand, position: op.position };
    }
    return this.parsePostfix();
  }

  private parsePostfix(): Expr {
    const expr = this.parsePrimary();
    if (this.isKeyword('exists')) {
      const token = this.next();
      if (expr.type !== 'name') {
        throw new ExpressionError("'exists' applies to a name, e.g. customer.tier exists", token.position);
      }
      return { type: 'exists', path: expr.path, position: expr.position };
    }
    return expr;
  }

  private parsePrimary(): Expr {
    const token = this.peek();
    switch (token.kind) {
      case 'number':
        this.next();
        return { type: 'literal', value: token.value!, position: token.position };
      case 'string':
        this.next();
        return { type: 'literal', value: token.text, position: token.position };
      case 'word':
        return this.parseWord();
      case 'end':
        throw new ExpressionError(
          token.position === 0 ? 'the expression is empty' : 'unexpected end of the expression',
          token.position,
        );
      default:
        break;
    }
    if (token.text === '(') {
      this.next();
      this.enter(token.position);
      const inner = this.parseOr();
      this.leave();
      this.expectOp(')', `to close the '(' at ${token.position}`);
      return inner;
    }
    if (token.text === '[') {
      throw new ExpressionError("a list [...] may only follow 'in'", token.position);
    }
    throw new ExpressionError(`unexpected ${describe(token)}`, token.position);
  }

  private parseWord(): Expr {
    const token = this.next();
    const lower = token.text.toLowerCase();
    if (lower === 'true' || lower === 'false') {
      return { type: 'literal', value: lower === 'true', position: token.position };
    }
    if (lower === 'null') return { type: 'literal', value: null, position: token.position };
    if (lower === 'exists') {
      if (!this.isOp('(')) {
        throw new ExpressionError("'exists' needs a name: exists(customer.tier)", token.position);
      }
      this.next();
      const name = this.peek();
      if (name.kind !== 'word' || KEYWORDS.has(name.text.toLowerCase())) {
        throw new ExpressionError(`exists(...) takes a name, found ${describe(name)}`, name.position);
      }
      this.next();
      const path = this.parsePathRest(name);
      this.expectOp(')', 'to close exists(');
      return { type: 'exists', path, position: token.position };
    }
    if (KEYWORDS.has(lower)) {
      throw new ExpressionError(`unexpected keyword '${token.text}'`, token.position);
    }
    const path = this.parsePathRest(token);
    if (this.isOp('(')) {
      throw new ExpressionError(
        `unknown function '${path.join('.')}' (the only function is exists(name))`,
        this.peek().position,
      );
    }
    return { type: 'name', path, position: token.position };
  }

  /** `first` has been consumed; reads `.word` segments. */
  private parsePathRest(first: Token): string[] {
    const path = [first.text];
    while (this.isOp('.')) {
      this.next();
      const segment = this.peek();
      if (segment.kind !== 'word') {
        throw new ExpressionError(`expected a name after '.', found ${describe(segment)}`, segment.position);
      }
      this.next();
      path.push(segment.text);
    }
    return path;
  }
}

function describe(token: Token): string {
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

/** Parses a condition expression; throws ExpressionError (message and 0-based position) when it cannot. */
export function parseExpression(source: string): Expr {
  if (typeof source !== 'string') throw new ExpressionError('the expression must be a string', 0);
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionError(
      `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`,
      MAX_EXPRESSION_LENGTH,
    );
  }
  return new Parser(tokenize(source)).parse();
}

// ---------------------------------------------------------------------------------------------------
// Validation

const KIND_OPERATORS = "a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'";

/**
 * Whether `source` is an acceptable condition of `kind`; null when it is, else the first problem.
 *
 * Both kinds: the expression parses; its top level (and each operand of and/or/not) is a condition —
 * a comparison, `in`, `exists` or a combination of conditions — not a bare name, number or sum; no
 * arithmetic on string, boolean or null literals. `mathematical` also allows `true` / `false` as a
 * condition. `state_variable` allows no arithmetic (+ - * / % or minus before a name): that is what
 * `mathematical` conditions are for.
 */
export function validateExpression(kind: ExpressionKind, source: string): ExpressionProblem | null {
  try {
    checkExpression(kind, parseExpression(source));
    return null;
  } catch (error) {
    if (error instanceof ExpressionError) return error.problem;
    throw error;
  }
}

/** Parses and validates; throws ExpressionError. */
export function compileExpression(kind: ExpressionKind, source: string): Expr {
  const ast = parseExpression(source);
  checkExpression(kind, ast);
  return ast;
}

function checkExpression(kind: ExpressionKind, ast: Expr): void {
  checkCondition(kind, ast);
  walk(ast, (node) => {
    if (node.type === 'arithmetic' || node.type === 'negate') {
      if (kind === 'state_variable') {
        const op = node.type === 'negate' ? '-' : node.op;
        throw new ExpressionError(
          `arithmetic ('${op}') is not allowed in a state_variable condition; use a mathematical condition`,
          node.position,
        );
      }
      const operands = node.type === 'negate' ? [node.operand] : [node.left, node.right];
      for (const operand of operands) {
        if (operand.type === 'literal' && typeof operand.value !== 'number') {
          throw new ExpressionError(
            `arithmetic needs numbers, not ${JSON.stringify(operand.value)}`,
            operand.position,
          );
        }
      }
    }
  });
}

function checkCondition(kind: ExpressionKind, node: Expr): void {
  switch (node.type) {
    case 'compare':
    case 'in':
    case 'exists':
      return;
    case 'logical':
      checkCondition(kind, node.left);
      checkCondition(kind, node.right);
      return;
    case 'not':
      checkCondition(kind, node.operand);
      return;
    case 'literal':
      if (kind === 'mathematical' && typeof node.value === 'boolean') return;
      break;
    default:
      break;
  }
  throw new ExpressionError(`a ${kind} condition must be ${KIND_OPERATORS}`, node.position);
}

function walk(node: Expr | ListExpr, visit: (node: Expr) => void): void {
  if (node.type === 'list') {
    for (const item of node.items) walk(item, visit);
    return;
  }
  visit(node);
  switch (node.type) {
    case 'negate':
    case 'not':
      walk(node.operand, visit);
      break;
    case 'arithmetic':
    case 'compare':
    case 'logical':
      walk(node.left, visit);
      walk(node.right, visit);
      break;
    case 'in':
      walk(node.item, visit);
      walk(node.collection, visit);
      break;
    default:
      break;
  }
}

/** The names an expression reads, each once, in order of appearance (`exists` operands included). */
export function expressionNames(ast: Expr): string[] {
  const names = new Set<string>();
  walk(ast, (node) => {
    if (node.type === 'name' || node.type === 'exists') names.add(node.path.join('.'));
  });
  return [...names];
}

// ---------------------------------------------------------------------------------------------------
// Evaluation

/** Division or remainder by zero: the whole expression has no value. */
class DivisionByZero extends Error {}

export interface EvaluationResult {
  value: unknown;
  /** A division or remainder by zero occurred: `value` is undefined. */
  divisionByZero: boolean;
}

/**
 * Evaluates a parsed expression over `variables` (plain data). Missing names are undefined; any
 * comparison or `in` with an undefined side is false; arithmetic needs numbers (numeric strings
 * count) and is undefined otherwise; a division or remainder by zero makes the whole result
 * undefined. `and` / `or` short-circuit and give booleans.
 */
export function evaluate(ast: Expr, variables: Record<string, unknown>): unknown {
  return evaluateDetailed(ast, variables).value;
}

export function evaluateDetailed(ast: Expr, variables: Record<string, unknown>): EvaluationResult {
  try {
    return { value: evalNode(ast, variables), divisionByZero: false };
  } catch (error) {
    if (error instanceof DivisionByZero) return { value: undefined, divisionByZero: true };
    throw error;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Reads a dotted path through own properties of plain objects only; anything else is undefined. */
export function lookupPath(variables: Record<string, unknown>, path: readonly string[]): unknown {
  let current: unknown = variables;
  for (const segment of path) {
    if (!isPlainObject(current) || !Object.hasOwn(current, segment)) return undefined;
    current = current[segment];
  }
  return isData(current) ? current : undefined;
}

function isData(value: unknown): boolean {
  const type = typeof value;
  if (type === 'number') return Number.isFinite(value);
  return (
    value === null || type === 'string' || type === 'boolean' || Array.isArray(value) || isPlainObject(value)
  );
}

const NUMERIC_STRING = /^\s*-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*$/;

function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && NUMERIC_STRING.test(value)) return Number(value);
  return undefined;
}

function truthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return false;
  return !(typeof value === 'number' && Number.isNaN(value));
}

/** `==`: numbers (a numeric string equals the number it spells), strings, booleans and null by value. */
function equals(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') {
    const x = toNumber(a);
    const y = toNumber(b);
    return x !== undefined && y !== undefined && x === y;
  }
  if (a === null || typeof a !== 'object') return a === b;
  return false;
}

function compare(op: CompareOp, a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return false;
  if (op === '==') return equals(a, b);
  if (op === '!=') return !equals(a, b);
  let x: number | string | undefined;
  let y: number | string | undefined;
  if (typeof a === 'string' && typeof b === 'string') {
    x = a;
    y = b;
  } else {
    x = toNumber(a);
    y = toNumber(b);
    if (x === undefined || y === undefined) return false;
  }
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}

function arithmetic(op: ArithmeticOp, a: unknown, b: unknown): number | undefined {
  const x = toNumber(a);
  const y = toNumber(b);
  if (x === undefined || y === undefined) return undefined;
  let result: number;
  switch (op) {
    case '+':
      result = x + y;
      break;
    case '-':
      result = x - y;
      break;
    case '*':
      result = x * y;
      break;
    case '/':
      if (y === 0) throw new DivisionByZero();
      result = x / y;
      break;
    default:
      if (y === 0) throw new DivisionByZero();
      result = x % y;
      break;
  }
  return Number.isFinite(result) ? result : undefined;
}

function evalNode(node: Expr, variables: Record<string, unknown>): unknown {
  switch (node.type) {
    case 'literal':
      return node.value;
    case 'name':
      return lookupPath(variables, node.path);
    case 'exists': {
      const value = lookupPath(variables, node.path);
      return value !== undefined && value !== null;
    }
    case 'negate': {
      const value = toNumber(evalNode(node.operand, variables));
      return value === undefined ? undefined : -value;
    }
    case 'not':
      return !truthy(evalNode(node.operand, variables));
    case 'arithmetic':
      return arithmetic(node.op, evalNode(node.left, variables), evalNode(node.right, variables));
    case 'compare':
      return compare(node.op, evalNode(node.left, variables), evalNode(node.right, variables));
    case 'logical': {
      const left = truthy(evalNode(node.left, variables));
      if (node.op === 'and' ? !left : left) return left;
      return truthy(evalNode(node.right, variables));
    }
    case 'in': {
      const item = evalNode(node.item, variables);
      if (item === undefined) return false;
      let found: boolean;
      if (node.collection.type === 'list') {
        found = node.collection.items.some((entry) => equals(item, evalNode(entry, variables)));
      } else {
        const collection = evalNode(node.collection, variables);
        if (Array.isArray(collection)) found = collection.some((entry) => equals(item, entry));
        else if (typeof collection === 'string' && typeof item === 'string')
          found = collection.includes(item);
        else return false;
      }
      return node.negated ? !found : found;
    }
  }
}
