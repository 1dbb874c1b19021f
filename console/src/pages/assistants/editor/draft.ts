/**
 * The assistant being edited: a copy of the API's answer changed field by field (dotted paths), and
 * the body of a save — only the top-level fields whose value changed. A nested object is sent whole
 * (the API replaces the stored one), with its masked secrets as the API showed them: sent back
 * unchanged, a masked secret keeps the stored one (see secrets.ts for when it cannot).
 */
import { useState } from 'preact/hooks';
import type { components } from '../../../../../clients/typescript/src/index.js';

export type Assistant = components['schemas']['Assistant'];
type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The value at a dotted path, or undefined. */
export function valueAt(root: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>(
      (node, key) => (isObject(node) || Array.isArray(node) ? (node as Json)[key] : undefined),
      root,
    );
}

/** A copy of `root` with `value` at `path` (undefined removes it); missing objects on the way are made. */
export function withValue<T>(root: T, path: string, value: unknown): T {
  const keys = path.split('.');
  const copy = structuredClone(root) as Json;
  let node: Json = copy;
  keys.slice(0, -1).forEach((key, index) => {
    const next = node[key];
    if (!isObject(next) && !Array.isArray(next)) node[key] = /^\d+$/.test(keys[index + 1]!) ? [] : {};
    node = node[key] as Json;
  });
  const last = keys.at(-1)!;
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = value;
  return copy as T;
}

/** The top-level fields of `draft` that differ from `saved`. */
export function changedFields(saved: Json, draft: Json): Json {
  const body: Json = {};
  for (const [field, value] of Object.entries(draft)) {
    if (['id', 'organization_id', 'user_id', 'created_at', 'updated_at'].includes(field)) continue;
    if (JSON.stringify(value) !== JSON.stringify(saved[field])) body[field] = value;
  }
  return body;
}

export interface Draft {
  saved: Assistant;
  value: Assistant;
  get(path: string): unknown;
  set(path: string, value: unknown): void;
  /** After a save: the API's answer becomes both what is saved and what is edited. */
  reset(saved: Assistant): void;
}

export function useDraft(initial: Assistant): Draft {
  const [saved, setSaved] = useState(initial);
  const [value, setValue] = useState(initial);
  return {
    saved,
    value,
    get: (path) => valueAt(value, path),
    set: (path, next) => setValue((current) => withValue(current, path, next)),
    reset(next) {
      setSaved(next);
      setValue(next);
    },
  };
}
