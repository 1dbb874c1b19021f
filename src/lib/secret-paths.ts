/**
 * Secrets inside a nested configuration object, named by path (`a.b`, `list[].key`, `obj.*` for
 * every field of an object whose name looks secret). `sealPaths` encrypts them in place before the
 * object is stored; `maskPaths` shows them as `****` + last 4; `openPaths` restores them for use.
 */
import { maskSecret, type SecretBox } from './secrets.js';

type Json = Record<string, unknown>;

const SECRET_NAME = /(^|_)(api_key|key|token|secret|password|private_key)$/i;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Calls `visit(holder, field)` for every string field that `path` names inside `root`. */
function eachSecret(root: Json, path: string, visit: (holder: Json, field: string) => void): void {
  const walk = (node: unknown, parts: string[]): void => {
    const [head, ...rest] = parts;
    if (head === undefined || !isObject(node)) return;
    if (head === '*' && rest.length === 0) {
      for (const [field, value] of Object.entries(node))
        if (typeof value === 'string' && SECRET_NAME.test(field)) visit(node, field);
      return;
    }
    if (head.endsWith('[]')) {
      const list = node[head.slice(0, -2)];
      if (Array.isArray(list)) for (const item of list) walk(item, rest);
      return;
    }
    if (rest.length === 0) {
      if (typeof node[head] === 'string') visit(node, head);
      return;
    }
    walk(node[head], rest);
  };
  walk(root, path.split('.'));
}

function transform(root: Json, paths: readonly string[], change: (value: string) => string): Json {
  const copy = structuredClone(root);
  for (const path of paths)
    eachSecret(copy, path, (holder, field) => (holder[field] = change(holder[field] as string)));
  return copy;
}

export function sealPaths(root: Json, paths: readonly string[], box: SecretBox): Json {
  return transform(root, paths, (value) => box.seal(value));
}

export function openPaths(root: Json, paths: readonly string[], box: SecretBox): Json {
  return transform(root, paths, (value) => box.open(value));
}

export function maskPaths(root: Json, paths: readonly string[], box: SecretBox): Json {
  return transform(root, paths, (value) => maskSecret(box.open(value)) ?? '');
}

/**
 * Replaces masked values (`****…`) in `next` by the secret stored at the same place in `previous`
 * (opened), so that an object read from the API can be sent back unchanged. Returns the location of
 * a masked value with nothing stored behind it, if any.
 */
export function restoreMasked(
  next: Json,
  previous: Json | undefined,
  paths: readonly string[],
): { result: Json; unknownMasked?: Array<string | number> } {
  const result = structuredClone(next);
  let unknownMasked: Array<string | number> | undefined;
  const lookup = (location: Array<string | number>): unknown =>
    location.reduce<unknown>(
      (node, key) => (node as Record<string | number, unknown> | undefined)?.[key],
      previous,
    );
  const walk = (node: unknown, parts: string[], location: Array<string | number>): void => {
    const [head, ...rest] = parts;
    if (head === undefined || !isObject(node)) return;
    const restore = (field: string) => {
      const value = node[field];
      if (typeof value !== 'string' || !value.startsWith('****')) return;
      const stored = lookup([...location, field]);
      if (typeof stored === 'string') node[field] = stored;
      else unknownMasked ??= [...location, field];
    };
    if (head === '*' && rest.length === 0) {
      for (const field of Object.keys(node)) if (SECRET_NAME.test(field)) restore(field);
    } else if (head.endsWith('[]')) {
      const name = head.slice(0, -2);
      const list = node[name];
      if (Array.isArray(list))
        for (const [index, item] of list.entries()) walk(item, rest, [...location, name, index]);
    } else if (rest.length === 0) {
      restore(head);
    } else {
      walk(node[head], rest, [...location, head]);
    }
  };
  for (const path of paths) walk(result, path.split('.'), []);
  return unknownMasked ? { result, unknownMasked } : { result };
}
