/**
 * What a route requires of its caller, declared once in the route's `config.access` and enforced by
 * the hook in `auth.ts` — never checked inside handlers. A route without a declaration fails the
 * start, so none can be forgotten. Who the caller is (`Principal`, roles, areas) is identity's, in
 * domains/identity/principal.ts.
 */
import type { Area, Level, Role, Via } from '../domains/identity/principal.js';

export type Access =
  | { public: true }
  | {
      public?: false;
      /** The ways in that may call the route (default: all three). */
      via?: readonly Via[];
      /** `admin` refuses members whose role is not admin. */
      role?: Role;
      /** Refuses users whose email is not verified. */
      verified?: true;
      /** For API keys: the permission area needed; the level is `read` for GET/HEAD unless `level` says. */
      area?: Area;
      level?: Level;
    };

/** Ready-made declarations for the common cases. */
export const access = {
  public: { public: true },
  /** Any valid credential: API key, JWT or dashboard session. */
  authenticated: {},
  /** A signed-in user (JWT or dashboard session), not an API key. */
  user: { via: ['jwt', 'cookie'] },
  jwtOnly: { via: ['jwt'] },
  admin: { role: 'admin' },
  area: (area: Area, level?: Level): Access => ({ area, ...(level ? { level } : {}) }),
} as const satisfies Record<string, Access | ((...args: never[]) => Access)>;

export function levelAllows(granted: Level | undefined, needed: Level): boolean {
  return granted === 'read_write' || (granted === 'read' && needed === 'read');
}
