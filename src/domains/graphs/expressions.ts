/**
 * The condition language of `mathematical` and `state_variable` edges (docs/graphs.md, "Conditions"):
 * what makes an expression an acceptable condition of its kind (the validation messages users see)
 * and what the engine asks of a parsed one. The language is our own — keyword operators `and`/`or`/
 * `not`/`in`, a postfix `exists`, lists only after `in` — in four small parts: tokens
 * (expression-lexer.ts), the grammar and its parser (expression-parser.ts), the rules of a condition
 * (here) and evaluation (expression-eval.ts). Nothing uses `eval` or `Function`.
 *
 * Hand-written on purpose (evaluated again in issue 16). A generic JavaScript-expression parser
 * (jsep) would bring process-wide operator tables and node kinds (calls, `this`, computed members) to
 * reject again. The evaluator libraries have grammars, equality and error texts of their own: filtrex
 * (a generated parser compiled to JavaScript; `in ("a", "b")`), jexl (transforms, filters), CEL (cel-js,
 * @marcbachmann/cel-js: no `and`/`or`/`exists`, no `'42' == 42`); expr-eval 2.0.2, the latest on npm,
 * carries CVE-2025-12735. Adopting any would change which expressions are accepted and every message
 * with its position that validation shows users.
 */
import type { ExpressionProblem } from './engine-types.js';
import { ExpressionError } from './expression-lexer.js';
import { type Expr, type ListExpr, parseExpression } from './expression-parser.js';

export type ExpressionKind = 'mathematical' | 'state_variable';

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
