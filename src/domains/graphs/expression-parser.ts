/**
 * The condition language's parser: tokens (expression-lexer.ts) to a syntax tree, by hand-written
 * recursive descent over this grammar (why hand-written: expressions.ts):
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
 *
 * Length and nesting are bounded, so that no tenant's expression can exhaust the stack.
 */
import { describeToken, ExpressionError, KEYWORDS, type Token, tokenize } from './expression-lexer.js';

export const MAX_EXPRESSION_LENGTH = 500;
/** Nesting of parentheses, lists and unary operators. */
export const MAX_EXPRESSION_DEPTH = 32;

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
        `unexpected ${describeToken(token)}; expected an operator or the end`,
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
      throw new ExpressionError(`expected '${text}' ${what}, found ${describeToken(token)}`, token.position);
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
          `expected ',' or ']' in the list, found ${describeToken(token)}`,
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
    throw new ExpressionError(`unexpected ${describeToken(token)}`, token.position);
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
        throw new ExpressionError(`exists(...) takes a name, found ${describeToken(name)}`, name.position);
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
        throw new ExpressionError(
          `expected a name after '.', found ${describeToken(segment)}`,
          segment.position,
        );
      }
      this.next();
      path.push(segment.text);
    }
    return path;
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
