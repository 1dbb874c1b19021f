/**
 * Who the caller of a request is: the principal every service takes, with the role, permission
 * areas and way in it came by. Identity builds it (authenticator.ts); the HTTP layer resolves it
 * through the `Authenticator` port below and only decides which routes it may call (http/access.ts).
 */
import type { RateWindowDecision } from '../../db/rate-windows.js';
import type { Tenant } from '../../db/tenant.js';

export const AREAS = [
  'assistants',
  'calls',
  'campaigns',
  'graphs',
  'sms',
  'phone_numbers',
  'organization',
] as const;
export type Area = (typeof AREAS)[number];
export const LEVELS = ['read', 'read_write'] as const;
export type Level = (typeof LEVELS)[number];
export type Permissions = Partial<Record<Area, Level>>;

export type Via = 'api_key' | 'jwt' | 'cookie';
export type Role = 'admin' | 'user';

export interface Principal {
  via: Via;
  user: { id: number; email: string; firstName: string; lastName: string; verified: boolean };
  organization: { id: number };
  role: Role;
  /** The organization scope every store query of this request uses. */
  tenant: Tenant;
  /** The login session behind a JWT or cookie. */
  sessionId: string | null;
  apiKey: { id: number; permissions: Permissions; rateLimit: number | null } | null;
}

/** The cookie a dashboard session travels in: set at sign-in by identity, read by http/auth.ts. */
export const SESSION_COOKIE = 'sb_session';

/** What a rate limit decided for one request (the shared fixed-window counter of db/rate-windows.ts). */
export type RateDecision = RateWindowDecision;

/** Implemented by the identity domain; the HTTP layer only asks it questions. */
export interface Authenticator {
  fromApiKey(secret: string): Promise<Principal | null>;
  fromAccessToken(token: string): Promise<Principal | null>;
  /** The principal of a session cookie, with the hash of the CSRF token that session expects. */
  fromSessionCookie(value: string): Promise<{ principal: Principal; csrfTokenHash: string } | null>;
  /** Counts one request against the key's `rate_limit` (only called for keys that have one). */
  takeRateLimit(apiKeyId: number, limit: number): Promise<RateDecision>;
  recordApiKeyUse(apiKeyId: number): void;
}
