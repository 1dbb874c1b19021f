/** SQL of the identity domain: users, organizations, memberships, login sessions, mailed tokens. */
import { and, asc, eq, gt, isNull, ne, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import {
  authSessions,
  emailTokens,
  loginFailures,
  memberships,
  organizations,
  users,
} from '../../db/schema/index.js';
import { withUpdatedAt } from '../../db/touch.js';
import type { Role } from './principal.js';

export type UserRow = typeof users.$inferSelect;
export type OrganizationRow = typeof organizations.$inferSelect;
export type SessionRow = typeof authSessions.$inferSelect;

export async function findUserByEmail(ex: Executor, email: string): Promise<UserRow | undefined> {
  const [row] = await ex.select().from(users).where(eq(users.email, email)).limit(1);
  return row;
}

export async function findUserById(ex: Executor, id: number): Promise<UserRow | undefined> {
  const [row] = await ex.select().from(users).where(eq(users.id, id)).limit(1);
  return row;
}

/** Inserts a user; undefined when the email is taken (the unique index decides, race-free). */
export async function insertUser(
  ex: Executor,
  values: { email: string; passwordHash: string | null; firstName: string; lastName: string },
): Promise<UserRow | undefined> {
  const [row] = await ex
    .insert(users)
    .values(values)
    .onConflictDoNothing({ target: users.email })
    .returning();
  return row;
}

export async function setLastOrganization(
  ex: Executor,
  userId: number,
  organizationId: number,
): Promise<void> {
  await ex.update(users).set({ lastOrganizationId: organizationId }).where(eq(users.id, userId));
}

export async function markEmailVerified(ex: Executor, userId: number): Promise<void> {
  await ex
    .update(users)
    .set(withUpdatedAt({ emailVerifiedAt: sql`coalesce(${users.emailVerifiedAt}, now())` }))
    .where(eq(users.id, userId));
}

export async function updateUser(
  ex: Executor,
  userId: number,
  changes: Partial<
    Pick<UserRow, 'firstName' | 'lastName' | 'email' | 'emailVerifiedAt' | 'preferences' | 'passwordHash'>
  >,
): Promise<UserRow | undefined> {
  const [row] = await ex.update(users).set(withUpdatedAt(changes)).where(eq(users.id, userId)).returning();
  return row;
}

/** Adds the user to the organization unless already a member. */
export async function addMembership(
  ex: Executor,
  userId: number,
  organizationId: number,
  role: Role,
): Promise<void> {
  await ex.insert(memberships).values({ userId, organizationId, role }).onConflictDoNothing();
}

/** Claims the user's one-time trial credits; true only the first time, even under concurrency. */
export async function claimTrialCredits(ex: Executor, userId: number): Promise<boolean> {
  const rows = await ex
    .update(users)
    .set({ trialCreditsGrantedAt: sql`now()` })
    .where(and(eq(users.id, userId), isNull(users.trialCreditsGrantedAt)))
    .returning({ id: users.id });
  return rows.length === 1;
}

export async function insertMembership(ex: Executor, userId: number, organizationId: number, role: Role) {
  await ex.insert(memberships).values({ userId, organizationId, role });
}

export interface MembershipView {
  organizationId: number;
  name: string;
  slug: string;
  role: Role;
}

export async function listMemberships(ex: Executor, userId: number): Promise<MembershipView[]> {
  return ex
    .select({
      organizationId: organizations.id,
      name: organizations.name,
      slug: organizations.slug,
      role: memberships.role,
    })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(eq(memberships.userId, userId))
    .orderBy(asc(organizations.id));
}

export async function findMembership(
  ex: Executor,
  userId: number,
  organizationId: number,
): Promise<MembershipView | undefined> {
  const [row] = await ex
    .select({
      organizationId: organizations.id,
      name: organizations.name,
      slug: organizations.slug,
      role: memberships.role,
    })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(and(eq(memberships.userId, userId), eq(memberships.organizationId, organizationId)))
    .limit(1);
  return row;
}

export async function insertSession(
  ex: Executor,
  values: {
    userId: number;
    organizationId: number;
    refreshTokenHash: string;
    cookieTokenHash: string;
    csrfTokenHash: string;
    expiresAt: Date;
    userAgent: string | null;
  },
): Promise<SessionRow> {
  const [row] = await ex.insert(authSessions).values(values).returning();
  return row!;
}

export async function findLiveSession(ex: Executor, id: string): Promise<SessionRow | undefined> {
  const [row] = await ex
    .select()
    .from(authSessions)
    .where(
      and(eq(authSessions.id, id), isNull(authSessions.revokedAt), gt(authSessions.expiresAt, sql`now()`)),
    )
    .limit(1);
  return row;
}

/**
 * How many replaced refresh tokens a session remembers. Reuse that matters is of a recent token: the
 * owner's token coming back after a thief refreshed with a copy (or the thief's after the owner did).
 * A bound by count keeps the row small however often a client refreshes; an older token coming back
 * is then a plain 401, which still grants nothing.
 */
export const SPENT_REFRESH_TOKENS_KEPT = 20;

/**
 * Replaces the refresh token hash only if it is still `expectedHash` (of two concurrent rotations
 * from one token, exactly one wins), and remembers the replaced hash as spent in the same statement.
 */
export async function rotateRefreshToken(
  ex: Executor,
  id: string,
  expectedHash: string,
  values: { refreshTokenHash: string; organizationId?: number },
): Promise<boolean> {
  const rows = await ex
    .update(authSessions)
    .set({
      ...values,
      // SET expressions read the row as it was: this prepends the hash being replaced.
      spentRefreshTokenHashes: sql`(array[${authSessions.refreshTokenHash}] || ${authSessions.spentRefreshTokenHashes})[1:${sql.raw(String(SPENT_REFRESH_TOKENS_KEPT))}]`,
      lastRefreshedAt: sql`now()`,
    })
    .where(
      and(
        eq(authSessions.id, id),
        eq(authSessions.refreshTokenHash, expectedHash),
        isNull(authSessions.revokedAt),
      ),
    )
    .returning({ id: authSessions.id });
  return rows.length === 1;
}

/**
 * How long the refresh token replaced last may come back without ending the session: a client that
 * sent one refresh twice at once (two tabs, a retry) loses the race with itself, and its second
 * request, answered after the first committed, is no sign of a copy. Later, it is.
 */
export const REFRESH_RACE_GRACE_SECONDS = 10;

/**
 * Ends the session because `spentHash`, a refresh token it replaced, came back — unless that token
 * is the one replaced last, under REFRESH_RACE_GRACE_SECONDS ago (database clock). Returns whether
 * the session ended.
 */
export async function revokeForReplay(ex: Executor, id: string, spentHash: string): Promise<boolean> {
  const rows = await ex
    .update(authSessions)
    .set({ revokedAt: sql`now()`, spentRefreshTokenHashes: sql`'{}'::text[]` })
    .where(
      and(
        eq(authSessions.id, id),
        isNull(authSessions.revokedAt),
        sql`not coalesce(${authSessions.spentRefreshTokenHashes}[1] = ${spentHash}
          and ${authSessions.lastRefreshedAt} > now() - make_interval(secs => ${REFRESH_RACE_GRACE_SECONDS}), false)`,
      ),
    )
    .returning({ id: authSessions.id });
  return rows.length === 1;
}

/** Ends a session; its spent refresh-token hashes are dropped, since nothing is checked against them any more. */
export async function revokeSession(ex: Executor, id: string): Promise<void> {
  await ex
    .update(authSessions)
    .set({ revokedAt: sql`now()`, spentRefreshTokenHashes: sql`'{}'::text[]` })
    .where(and(eq(authSessions.id, id), isNull(authSessions.revokedAt)));
}

/** Ends every live session of the user except `keepSessionId` (their refresh tokens and cookies too). */
export async function revokeOtherSessions(
  ex: Executor,
  userId: number,
  keepSessionId: string | null,
): Promise<number> {
  const rows = await ex
    .update(authSessions)
    .set({ revokedAt: sql`now()`, spentRefreshTokenHashes: sql`'{}'::text[]` })
    .where(
      and(
        eq(authSessions.userId, userId),
        isNull(authSessions.revokedAt),
        keepSessionId ? ne(authSessions.id, keepSessionId) : undefined,
      ),
    )
    .returning({ id: authSessions.id });
  return rows.length;
}

export async function insertEmailToken(
  ex: Executor,
  values: { userId: number; purpose: 'verify_email'; tokenHash: string; expiresAt: Date },
): Promise<void> {
  await ex.insert(emailTokens).values(values);
}

/** Spends every unused token of the user for `purpose` (e.g. when the address they were sent to changes). */
export async function revokeEmailTokens(
  ex: Executor,
  userId: number,
  purpose: 'verify_email',
): Promise<void> {
  await ex
    .update(emailTokens)
    .set({ usedAt: sql`now()` })
    .where(and(eq(emailTokens.userId, userId), eq(emailTokens.purpose, purpose), isNull(emailTokens.usedAt)));
}

/** Marks an unused, unexpired token used and returns its user; undefined when there is none. */
export async function consumeEmailToken(
  ex: Executor,
  tokenHash: string,
  purpose: 'verify_email',
): Promise<number | undefined> {
  const [row] = await ex
    .update(emailTokens)
    .set({ usedAt: sql`now()` })
    .where(
      and(
        eq(emailTokens.tokenHash, tokenHash),
        eq(emailTokens.purpose, purpose),
        isNull(emailTokens.usedAt),
        gt(emailTokens.expiresAt, sql`now()`),
      ),
    )
    .returning({ userId: emailTokens.userId });
  return row?.userId;
}

export interface PrincipalRow {
  userId: number;
  email: string;
  firstName: string;
  lastName: string;
  emailVerifiedAt: Date | null;
  role: Role;
}

const principalColumns = {
  userId: users.id,
  email: users.email,
  firstName: users.firstName,
  lastName: users.lastName,
  emailVerifiedAt: users.emailVerifiedAt,
  role: memberships.role,
};

/** The user and their current role in `organizationId`, if the session is live and they are a member. */
export async function loadSessionPrincipal(
  ex: Executor,
  sessionId: string,
  organizationId: number | null,
): Promise<
  (PrincipalRow & { organizationId: number; cookieTokenHash: string; csrfTokenHash: string }) | undefined
> {
  const [row] = await ex
    .select({
      ...principalColumns,
      organizationId: memberships.organizationId,
      cookieTokenHash: authSessions.cookieTokenHash,
      csrfTokenHash: authSessions.csrfTokenHash,
    })
    .from(authSessions)
    .innerJoin(users, eq(users.id, authSessions.userId))
    .innerJoin(
      memberships,
      and(
        eq(memberships.userId, authSessions.userId),
        eq(memberships.organizationId, organizationId ?? authSessions.organizationId),
      ),
    )
    .where(
      and(
        eq(authSessions.id, sessionId),
        isNull(authSessions.revokedAt),
        gt(authSessions.expiresAt, sql`now()`),
      ),
    )
    .limit(1);
  return row;
}

export { principalColumns };

/** Sets the user's role in one organization, or in all of theirs. Returns how many memberships changed. */
export async function setRole(
  ex: Executor,
  userId: number,
  role: Role,
  organizationId?: number,
): Promise<number> {
  const rows = await ex
    .update(memberships)
    .set({ role })
    .where(
      and(
        eq(memberships.userId, userId),
        organizationId === undefined ? undefined : eq(memberships.organizationId, organizationId),
      ),
    )
    .returning({ userId: memberships.userId });
  return rows.length;
}

/** Failures counted for `email` in the window that is still open, or 0. */
export async function currentLoginFailures(
  ex: Executor,
  email: string,
  windowSeconds: number,
): Promise<{ failures: number; windowStart: Date | null }> {
  const [row] = await ex
    .select()
    .from(loginFailures)
    .where(
      and(
        eq(loginFailures.email, email),
        gt(loginFailures.windowStart, sql`now() - make_interval(secs => ${windowSeconds})`),
      ),
    )
    .limit(1);
  return row ? { failures: row.failures, windowStart: row.windowStart } : { failures: 0, windowStart: null };
}

/** Counts one failure for `email`, opening a new window when the last one has closed. */
export async function recordLoginFailure(ex: Executor, email: string, windowSeconds: number): Promise<void> {
  await ex.execute(sql`
    insert into login_failures (email, window_start, failures) values (${email}, now(), 1)
    on conflict (email) do update set
      failures = case when login_failures.window_start > now() - make_interval(secs => ${windowSeconds})
                      then login_failures.failures + 1 else 1 end,
      window_start = case when login_failures.window_start > now() - make_interval(secs => ${windowSeconds})
                          then login_failures.window_start else now() end`);
}

export async function clearLoginFailures(ex: Executor, email: string): Promise<void> {
  await ex.delete(loginFailures).where(eq(loginFailures.email, email));
}
