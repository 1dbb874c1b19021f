/**
 * The session context and the built-in `update_context` tool that writes it (docs/graphs.md, "The
 * session context"). Pure: the sessions store, the simulate endpoint and the call runtime all merge
 * through `applyContextUpdate`, so a context written in a call and one written in a simulation obey
 * the same rules.
 */

export const CONTEXT_TOOL_NAME = 'update_context';

/**
 * The built-in tool every graph assistant gets (OpenAI-style function definition): it writes the
 * session context that later assistants read and state_variable / mathematical conditions test.
 */
export const CONTEXT_TOOL = {
  type: 'function',
  function: {
    name: CONTEXT_TOOL_NAME,
    description:
      'Save facts about the caller and the conversation in the shared session context, which the ' +
      'next assistants read and call routing tests. Keys merge into what is already there (nested ' +
      'objects merge too; "customer.tier" is the same as {"customer": {"tier": ...}}); null removes a key.',
    parameters: {
      type: 'object',
      properties: {
        updates: {
          type: 'object',
          description:
            'Keys to set, e.g. {"intent": "billing", "customer": {"verified": true}}; null removes a key.',
          additionalProperties: true,
        },
      },
      required: ['updates'],
      additionalProperties: false,
    },
  },
} as const;

/** An update the context tool cannot apply (the model is told why). */
export class ContextUpdateError extends Error {
  override readonly name = 'ContextUpdateError';
}

export const MAX_CONTEXT_BYTES = 64 * 1024;
const MAX_CONTEXT_DEPTH = 10;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Applies the context tool's `updates` to `context` and returns the new context (neither argument is
 * changed). Keys merge: a plain object merges into a plain object key by key, at any depth; any other
 * value (string, number, boolean, array) replaces; null removes the key; a dotted key ("a.b") is a
 * path into nested objects. Keys `__proto__`, `constructor`, `prototype` are refused, as are values
 * that are not JSON data, nesting deeper than 10 and a result over 64 KB of JSON.
 */
export function applyContextUpdate(
  context: Record<string, unknown>,
  updates: unknown,
): Record<string, unknown> {
  if (!isPlainObject(updates)) throw new ContextUpdateError('updates must be an object of keys to set');
  const result = structuredClone(context);
  mergeInto(result, updates, []);
  const size = Buffer.byteLength(JSON.stringify(result));
  if (size > MAX_CONTEXT_BYTES) {
    throw new ContextUpdateError(`the context would be ${size} bytes, more than ${MAX_CONTEXT_BYTES}`);
  }
  return result;
}

function mergeInto(target: Record<string, unknown>, updates: Record<string, unknown>, at: string[]): void {
  for (const [rawKey, value] of Object.entries(updates)) {
    const path = rawKey.split('.');
    const where = [...at, ...path];
    if (path.some((key) => key === '' || FORBIDDEN_KEYS.has(key))) {
      throw new ContextUpdateError(`key ${JSON.stringify(where.join('.'))} is not allowed`);
    }
    checkDepth(where);
    let parent: Record<string, unknown> | null = target;
    for (const key of path.slice(0, -1)) {
      if (!isPlainObject(parent[key])) {
        if (value === null) {
          parent = null; // removing something under a key that holds no object: nothing to do
          break;
        }
        parent[key] = {};
      }
      parent = parent[key] as Record<string, unknown>;
    }
    if (parent === null) continue;
    const key = path.at(-1)!;
    if (value === null) {
      delete parent[key];
    } else if (isPlainObject(value)) {
      if (!isPlainObject(parent[key])) parent[key] = {};
      mergeInto(parent[key] as Record<string, unknown>, value, where);
    } else {
      parent[key] = jsonValue(value, where);
    }
  }
}

function checkDepth(at: string[]): void {
  if (at.length > MAX_CONTEXT_DEPTH) {
    throw new ContextUpdateError(
      `key ${JSON.stringify(at.join('.'))} is nested more than ${MAX_CONTEXT_DEPTH} deep`,
    );
  }
}

function jsonValue(value: unknown, at: string[]): unknown {
  checkDepth(at);
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (Array.isArray(value)) return value.map((item, i) => jsonValue(item, [...at, String(i)]));
  if (isPlainObject(value)) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (FORBIDDEN_KEYS.has(key)) {
        throw new ContextUpdateError(`key ${JSON.stringify([...at, key].join('.'))} is not allowed`);
      }
      copy[key] = jsonValue(item, [...at, key]);
    }
    return copy;
  }
  throw new ContextUpdateError(`the value of ${JSON.stringify(at.join('.'))} is not JSON data`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
