/**
 * Evaluation of a parsed condition (expression-parser.ts) over plain data: the session context, and
 * for mathematical conditions the call's four metrics. Data never makes it throw: a missing name, a
 * mix of types or a division by zero gives a value the engine reports (docs/graphs.md, "Values").
 * Names resolve only through own properties of plain data objects, never through prototypes.
 */
import type { ArithmeticOp, CompareOp, Expr } from './expression-parser.js';

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
