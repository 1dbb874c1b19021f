/**
 * Secrets inside a nested configuration object, named by path (`a.b`, `list[].key`, `obj.*` for
 * every field of an object whose name looks secret, `obj.{}` for every string field of an object
 * whatever its name — a tool's request headers, which are all secret). `sealPaths` encrypts them in place before the
 * object is stored; `maskPaths` shows them as `****` + last 4; `openPaths` restores them for use;
 * `restoreMasked` decides when a masked value sent back may keep the stored secret.
 */
import { isMasked, maskSecret, type SecretBox } from './secrets.js';

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
    if ((head === '*' || head === '{}') && rest.length === 0) {
      for (const [field, value] of Object.entries(node))
        if (typeof value === 'string' && (head === '{}' || SECRET_NAME.test(field))) visit(node, field);
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
 * An opened object as an answer would show it. A caller's update starts from this for the fields it
 * leaves out, so that a secret it did not send is kept the one way a masked one is: `restoreMasked`.
 */
export function maskOpenedPaths(root: Json, paths: readonly string[]): Json {
  return transform(root, paths, (value) => maskSecret(value) ?? '****');
}

/**
 * A secret at `path` and the fields that say where it is sent (`boundTo`: its provider, base URL,
 * domain). A stored secret belongs to those values: sent back masked, it is kept only while they
 * stay, so that no one who sees the masked value can send the stored secret somewhere else.
 */
export interface SecretField {
  path: string;
  /** Paths from the root (or in `outside`); `list[]` is the secret's own item of that list. */
  boundTo?: readonly string[];
}

type Location = Array<string | number>;

/** Why a masked value cannot stand for a stored secret, and where it is (from the root). */
export interface MaskedRefusal {
  location: Location;
  msg: string;
}

function at(root: unknown, location: Location): unknown {
  return location.reduce<unknown>(
    (node, key) => (node as Record<string | number, unknown> | undefined)?.[key],
    root,
  );
}

/** `bound` made concrete for the secret at `secretLocation`: `list[]` takes the secret's index. */
function boundLocation(bound: string, secretLocation: Location): Location {
  const location: Location = [];
  for (const part of bound.split('.')) {
    if (!part.endsWith('[]')) {
      location.push(part);
      continue;
    }
    const name = part.slice(0, -2);
    const index = secretLocation.findIndex(
      (key, i) => key === name && typeof secretLocation[i + 1] === 'number',
    );
    if (index < 0) throw new Error(`${bound} names a list the secret is not in`);
    location.push(name, secretLocation[index + 1] as number);
  }
  return location;
}

/** Absent and null say the same (no such field); values are plain JSON. */
function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function display(location: Location): string {
  return location
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`))
    .join('');
}

/**
 * The one place where a masked value (`****…`) in `next` is taken to mean the secret stored at the
 * same place in `previous` (opened), so that an object read from the API can be sent back. It may
 * only while every field the secret is bound to keeps its stored value (a field outside the object,
 * such as an assistant's `llm_provider`, is looked up in `outside`); otherwise, or when nothing is
 * stored there, the answer names the masked value: the caller must send the secret itself.
 */
export function restoreMasked(
  next: Json,
  previous: Json | undefined,
  secrets: readonly SecretField[],
  outside: { next?: Json; previous?: Json } = {},
): { result: Json; refused?: MaskedRefusal } {
  const result = structuredClone(next);
  const before = { ...outside.previous, ...previous };
  const after = { ...outside.next, ...result };
  let refused: MaskedRefusal | undefined;
  const walk = (node: unknown, secret: SecretField, parts: string[], location: Location): void => {
    const [head, ...rest] = parts;
    if (head === undefined || !isObject(node) || refused) return;
    const restore = (field: string) => {
      const value = node[field];
      if (typeof value !== 'string' || !isMasked(value) || refused) return;
      const here = [...location, field];
      const stored = at(previous, here);
      if (typeof stored !== 'string') {
        refused = {
          location: here,
          msg: 'A masked value can only stand for a stored secret; send the secret itself',
        };
        return;
      }
      const moved = (secret.boundTo ?? [])
        .map((bound) => boundLocation(bound, here))
        .filter((bound) => !sameValue(at(after, bound), at(before, bound)));
      if (moved.length > 0) {
        refused = {
          location: here,
          msg:
            `${moved.map(display).join(' and ')} changed: send the secret itself again. A stored ` +
            'secret stays with the provider and address it was given for; a masked value cannot move it',
        };
        return;
      }
      node[field] = stored;
    };
    if (head === '*' && rest.length === 0) {
      for (const field of Object.keys(node)) if (SECRET_NAME.test(field)) restore(field);
    } else if (head === '{}' && rest.length === 0) {
      for (const field of Object.keys(node)) restore(field);
    } else if (head.endsWith('[]')) {
      const name = head.slice(0, -2);
      const list = node[name];
      if (Array.isArray(list))
        for (const [index, item] of list.entries()) walk(item, secret, rest, [...location, name, index]);
    } else if (rest.length === 0) {
      restore(head);
    } else {
      walk(node[head], secret, rest, [...location, head]);
    }
  };
  for (const secret of secrets) walk(result, secret, secret.path.split('.'), []);
  return refused ? { result, refused } : { result };
}
