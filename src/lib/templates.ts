/**
 * The template language of welcome messages, agendas and campaign texts: Jinja2-style
 * `{{ name }}` and `{{ name | filter | filter("argument") }}`. Rendering is a sandbox by design: a
 * template can only read the variables it is given and apply the filters below; there is no code to
 * run, no attribute access beyond dotted names into plain objects, and no loops.
 *
 * Missing variables take `fallbacks[name]` when given, else render as an empty string (and are
 * reported in `missing`), so a text never shows `{{name}}` to a caller.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

export type TemplateVariables = Record<string, unknown>;

export interface RenderResult {
  text: string;
  /** The variables the template used, with the values that went in (fallbacks included). */
  used: Record<string, unknown>;
  /** Names used by the template that had neither a value nor a fallback. */
  missing: string[];
}

export class TemplateError extends Error {
  constructor(
    message: string,
    /** Character offset of the problem in the template. */
    readonly position: number,
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

type Filter = (value: unknown, args: string[]) => unknown;

const str = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

export const FILTERS: Record<string, Filter> = {
  upper: (v) => str(v).toUpperCase(),
  lower: (v) => str(v).toLowerCase(),
  title_case: (v) =>
    str(v)
      .toLowerCase()
      .replace(/(^|[\s\-'])(\p{L})/gu, (_, sep: string, c: string) => sep + c.toUpperCase()),
  /** Jinja's `title` under its own name. */
  title: (v) => FILTERS.title_case!(v, []),
  capitalize: (v) => {
    const s = str(v).toLowerCase();
    return s.charAt(0).toUpperCase() + s.slice(1);
  },
  trim: (v) => str(v).trim(),
  /** `default("x")`: the argument when the value is missing or empty. */
  default: (v, [fallback = '']) => (v === undefined || v === null || v === '' ? fallback : v),
  /** `phone_format`: national format for the number's country (`(415) 555-2671`); `phone_format("international")`. */
  phone_format: (v, [style = 'national']) => {
    const parsed = parsePhoneNumberFromString(str(v));
    if (!parsed?.isValid()) return str(v);
    return style === 'international' ? parsed.formatInternational() : parsed.formatNational();
  },
  truncate: (v, [length = '255']) => {
    const s = str(v);
    const n = Number(length);
    return Number.isInteger(n) && n >= 0 && s.length > n ? `${s.slice(0, n)}…` : s;
  },
};

interface Expression {
  name: string;
  filters: Array<{ name: string; args: string[] }>;
}

type Part = { literal: string } | { expression: Expression; at: number };

const NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Parses a template once; `render` can then run it many times (campaigns render per contact). */
export function compileTemplate(
  template: string,
): (variables: TemplateVariables, fallbacks?: TemplateVariables) => RenderResult {
  const parts = parse(template);
  return (variables, fallbacks = {}) => run(parts, variables, fallbacks);
}

export function renderTemplate(
  template: string,
  variables: TemplateVariables,
  fallbacks: TemplateVariables = {},
): RenderResult {
  return compileTemplate(template)(variables, fallbacks);
}

/** The variable names a template reads (for `available_variables` checks and previews). */
export function templateVariables(template: string): string[] {
  const names = new Set<string>();
  for (const part of parse(template)) if ('expression' in part) names.add(part.expression.name);
  return [...names];
}

function parse(template: string): Part[] {
  const parts: Part[] = [];
  let index = 0;
  while (index < template.length) {
    const open = template.indexOf('{{', index);
    if (open === -1) {
      parts.push({ literal: template.slice(index) });
      break;
    }
    if (open > index) parts.push({ literal: template.slice(index, open) });
    const close = template.indexOf('}}', open + 2);
    if (close === -1) throw new TemplateError('"{{" is never closed with "}}"', open);
    parts.push({ expression: parseExpression(template.slice(open + 2, close), open + 2), at: open });
    index = close + 2;
  }
  return parts;
}

function parseExpression(source: string, offset: number): Expression {
  const segments = splitOutsideQuotes(source, '|', offset);
  const name = segments[0]!.text.trim();
  if (!NAME.test(name)) {
    throw new TemplateError(
      name === '' ? 'An expression needs a variable name' : `"${name}" is not a variable name`,
      segments[0]!.at,
    );
  }
  const filters = segments.slice(1).map(({ text, at }) => {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$/s.exec(text);
    if (!match) throw new TemplateError(`"${text.trim()}" is not a filter`, at);
    const filter = match[1]!;
    if (!FILTERS[filter]) {
      throw new TemplateError(`Unknown filter "${filter}" (known: ${Object.keys(FILTERS).join(', ')})`, at);
    }
    return {
      name: filter,
      args: match[2] === undefined ? [] : parseArguments(match[2], at + text.indexOf('(') + 1),
    };
  });
  return { name, filters };
}

/** Comma-separated string or number literals: `"x"`, `'x'`, `12`. */
function parseArguments(source: string, at: number): string[] {
  if (source.trim() === '') return [];
  return splitOutsideQuotes(source, ',', at).map(({ text, at: position }) => {
    const value = text.trim();
    const quoted = /^(["'])(.*)\1$/s.exec(value);
    if (quoted) return quoted[2]!.replace(/\\(["'\\])/g, '$1');
    if (/^-?\d+(\.\d+)?$/.test(value)) return value;
    throw new TemplateError(
      `Filter arguments are quoted strings or numbers, not ${value || 'nothing'}`,
      position,
    );
  });
}

function splitOutsideQuotes(
  source: string,
  separator: string,
  offset: number,
): Array<{ text: string; at: number }> {
  const pieces: Array<{ text: string; at: number }> = [];
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === separator) {
      pieces.push({ text: source.slice(start, i), at: offset + start });
      start = i + 1;
    }
  }
  if (quote) throw new TemplateError('A quoted argument is never closed', offset + source.length);
  pieces.push({ text: source.slice(start), at: offset + start });
  return pieces;
}

function lookup(variables: TemplateVariables, name: string): unknown {
  let value: unknown = variables;
  for (const key of name.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function run(parts: Part[], variables: TemplateVariables, fallbacks: TemplateVariables): RenderResult {
  let text = '';
  const used: Record<string, unknown> = {};
  const missing = new Set<string>();
  for (const part of parts) {
    if ('literal' in part) {
      text += part.literal;
      continue;
    }
    const { name, filters } = part.expression;
    let value = lookup(variables, name);
    if (value === undefined || value === null || value === '') {
      const fallback = lookup(fallbacks, name);
      if (fallback !== undefined && fallback !== null) value = fallback;
    }
    const hasDefault = filters.some((f) => f.name === 'default');
    if ((value === undefined || value === null) && !hasDefault) missing.add(name);
    used[name] = value ?? null;
    for (const filter of filters) value = FILTERS[filter.name]!(value, filter.args);
    text += typeof value === 'object' && value !== null ? JSON.stringify(value) : str(value);
  }
  return { text, used, missing: [...missing] };
}
