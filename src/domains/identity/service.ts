/**
 * Identity: sign-up, email verification, login sessions (JWT access token + rotating refresh token +
 * dashboard cookie with its CSRF token), refresh, logout and switching organization.
 */
import type { Db, Executor } from '../../db/client.js';
import { peekRateWindow, takeRateWindow } from '../../db/rate-windows.js';
import { randomToken, safeEqual, sha256Hex } from '../../lib/crypto.js';
import type { Mailer } from '../../lib/mail.js';
import { clientNetwork } from '../../lib/net.js';
import { hashPassword, verifyPassword } from '../../lib/passwords.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { badRequest, conflict, forbidden, notFound, rateLimited, unauthorized } from '../errors.js';
import type { OrganizationService } from '../organizations/service.js';
import type { AccessTokens } from './access-tokens.js';
import { splitSessionToken } from './authenticator.js';
import type { Principal, Role } from './principal.js';
import type { IdentityChanges } from './principal-cache.js';
import * as store from './store.js';

const VERIFY_EMAIL_TTL_MS = 48 * 60 * 60 * 1000;

export interface IdentityConfig {
  publicUrl: string;
  sessionTtlSeconds: number;
  login: { maxFailures: number; maxFailuresPerAddress: number; failureWindowSeconds: number };
}

export interface IssuedSession {
  accessToken: string;
  expiresIn: number;
  refreshToken: string;
  /** Value of the dashboard session cookie; only on a new session. */
  cookieToken?: string;
  /** Echoed in `X-CSRF-Token` by cookie-authenticated requests; only on a new session. */
  csrfToken?: string;
  sessionExpiresAt: Date;
}

export interface SignedIn {
  user: store.UserRow;
  organization: { id: number; name: string; slug: string };
  role: Role;
  session: IssuedSession;
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export class IdentityService {
  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      tokens: AccessTokens;
      mailer: Mailer;
      changes: IdentityChanges;
      organizations: OrganizationService;
      config: IdentityConfig;
    },
  ) {}

  async register(
    input: {
      email: string;
      password: string;
      firstName: string;
      lastName: string;
      organizationName?: string;
    },
    userAgent: string | null,
  ): Promise<SignedIn> {
    const email = normalizeEmail(input.email);
    const passwordHash = await hashPassword(input.password);
    return this.deps.queue.transaction(async (tx, jobs) => {
      const user = await store.insertUser(tx, {
        email,
        passwordHash,
        firstName: input.firstName.trim(),
        lastName: input.lastName.trim(),
      });
      if (!user) throw conflict('An account with this email already exists');
      const name =
        input.organizationName?.trim() || `${user.firstName || email.split('@')[0]}'s organization`;
      const organization = await this.deps.organizations.create(tx, user.id, { name });
      await store.setLastOrganization(tx, user.id, organization.id);
      await this.queueVerificationMail(tx, jobs, user);
      const session = await this.openSession(tx, user.id, organization.id, 'admin', userAgent);
      return { user, organization, role: 'admin', session };
    });
  }

  async verifyEmail(token: string): Promise<store.UserRow> {
    const user = await this.deps.db.transaction(async (tx) => {
      const userId = await store.consumeEmailToken(tx, sha256Hex(token), 'verify_email');
      if (userId === undefined) throw badRequest('Invalid or expired verification token');
      await store.markEmailVerified(tx, userId);
      return store.findUserById(tx, userId);
    });
    if (!user) throw badRequest('Invalid or expired verification token');
    await this.deps.changes.userChanged(user.id);
    return user;
  }

  async resendVerification(principal: Principal): Promise<void> {
    await this.deps.queue.transaction(async (tx, jobs) => {
      const user = await store.findUserById(tx, principal.user.id);
      if (!user) throw unauthorized();
      if (user.emailVerifiedAt) throw badRequest('Email address is already verified');
      await this.queueVerificationMail(tx, jobs, user);
    });
  }

  /**
   * `clientAddress` is the request's address as the HTTP layer resolved it (TRUST_PROXY decides
   * whether a proxy's X-Forwarded-For is believed).
   */
  async login(
    input: { email: string; password: string; organizationId?: number },
    userAgent: string | null,
    clientAddress: string,
  ): Promise<SignedIn> {
    const email = normalizeEmail(input.email);
    // Guessing is throttled before any scrypt: per address (one source trying many emails) and per
    // email (many sources trying one; known or not, so the answer tells nothing).
    const address = await this.#addressFailures(clientAddress).peek();
    if (!address.allowed) {
      throw rateLimited(
        'Too many failed sign-ins from this address; try again later',
        address.retryAfterSeconds,
      );
    }
    const { maxFailures, failureWindowSeconds } = this.deps.config.login;
    const recent = await store.currentLoginFailures(this.deps.db, email, failureWindowSeconds);
    if (recent.failures >= maxFailures && recent.windowStart) {
      const retryAfter = Math.max(
        1,
        Math.ceil((recent.windowStart.getTime() + failureWindowSeconds * 1000 - Date.now()) / 1000),
      );
      throw rateLimited('Too many failed sign-ins for this email; try again later', retryAfter);
    }
    const user = await store.findUserByEmail(this.deps.db, email);
    // Always spend one scrypt, so the answer time does not tell whether the email exists.
    const valid = await verifyPassword(input.password, user?.passwordHash ?? null);
    if (!user || !valid) {
      await store.recordLoginFailure(this.deps.db, email, failureWindowSeconds);
      await this.#addressFailures(clientAddress).take();
      throw unauthorized('Incorrect email or password');
    }
    if (recent.failures > 0) await store.clearLoginFailures(this.deps.db, email);
    const membership = await this.#chooseMembership(user, input.organizationId);
    return this.deps.db.transaction(async (tx) => {
      await store.setLastOrganization(tx, user.id, membership.organizationId);
      const session = await this.openSession(
        tx,
        user.id,
        membership.organizationId,
        membership.role,
        userAgent,
      );
      return { user, organization: organizationOf(membership), role: membership.role, session };
    });
  }

  /**
   * Exchanges a refresh token for a new access token and a new refresh token. Presenting a refresh
   * token this session issued and has already replaced means it was copied: the whole session ends.
   * Any other wrong secret is only a 401 — the session id is no secret (every access token names
   * it), so a guess must not be able to end someone's session.
   */
  async refresh(refreshToken: string): Promise<SignedIn> {
    const parts = splitSessionToken(refreshToken);
    if (!parts) throw unauthorized('Invalid refresh token');
    const session = await store.findLiveSession(this.deps.db, parts.sessionId);
    if (!session) throw unauthorized('Invalid refresh token');
    const presentedHash = sha256Hex(parts.secret);
    if (!safeEqual(presentedHash, session.refreshTokenHash)) {
      if (!session.spentRefreshTokenHashes.some((spent) => safeEqual(presentedHash, spent))) {
        throw unauthorized('Invalid refresh token');
      }
      if (!(await store.revokeForReplay(this.deps.db, session.id, presentedHash))) {
        throw unauthorized('Refresh token already used');
      }
      await this.deps.changes.userChanged(session.userId);
      throw unauthorized('Refresh token already used; the session has been ended');
    }
    const user = await store.findUserById(this.deps.db, session.userId);
    const membership = user && (await store.findMembership(this.deps.db, user.id, session.organizationId));
    if (!user || !membership) throw unauthorized('Invalid refresh token');
    const secret = randomToken(32);
    const rotated = await store.rotateRefreshToken(this.deps.db, session.id, presentedHash, {
      refreshTokenHash: sha256Hex(secret),
    });
    // A concurrent refresh with the same token won the rotation (see REFRESH_RACE_GRACE_SECONDS).
    if (!rotated) throw unauthorized('Refresh token already used');
    return {
      user,
      organization: organizationOf(membership),
      role: membership.role,
      session: await this.#issue(
        session.id,
        user.id,
        membership,
        `${session.id}.${secret}`,
        session.expiresAt,
      ),
    };
  }

  async logout(principal: Principal): Promise<void> {
    if (principal.sessionId) await store.revokeSession(this.deps.db, principal.sessionId);
    await this.deps.changes.userChanged(principal.user.id);
  }

  /** Moves the caller's session to another organization they belong to. */
  async switchOrganization(principal: Principal, organizationId: number): Promise<SignedIn> {
    const sessionId = principal.sessionId;
    if (!sessionId) throw forbidden('Only a signed-in session can switch organization');
    const user = await store.findUserById(this.deps.db, principal.user.id);
    const membership = user && (await store.findMembership(this.deps.db, user.id, organizationId));
    if (!user || !membership) throw notFound('Organization not found');
    const secret = randomToken(32);
    const session = await this.deps.db.transaction(async (tx) => {
      const live = await store.findLiveSession(tx, sessionId);
      if (!live) throw unauthorized('Session expired');
      // The refresh token rotates here too, and the replaced one counts as spent like any other: the
      // client got the new one in this answer, so the old one coming back means a copy.
      const rotated = await store.rotateRefreshToken(tx, sessionId, live.refreshTokenHash, {
        refreshTokenHash: sha256Hex(secret),
        organizationId,
      });
      // A refresh that raced this switch changed the token first: let the client retry with it.
      if (!rotated) throw conflict('The session changed during the switch; try again');
      await store.setLastOrganization(tx, user.id, organizationId);
      return live;
    });
    await this.deps.changes.userChanged(user.id);
    return {
      user,
      organization: organizationOf(membership),
      role: membership.role,
      session: await this.#issue(sessionId, user.id, membership, `${sessionId}.${secret}`, session.expiresAt),
    };
  }

  async profile(principal: Principal) {
    const user = await store.findUserById(this.deps.db, principal.user.id);
    if (!user) throw unauthorized();
    const memberships = await store.listMemberships(this.deps.db, user.id);
    return { user, memberships };
  }

  /**
   * Failed sign-ins from one address (an IPv6 client's whole /64), in the shared fixed-window
   * counter (cluster-wide, database clock). Only failures count, so many people signing in from behind one NAT are not refused, and
   * a success does not clear the count, so one valid account cannot reset it for a guesser.
   */
  #addressFailures(clientAddress: string) {
    const { maxFailuresPerAddress, failureWindowSeconds } = this.deps.config.login;
    const bucket = `login.address:${clientNetwork(clientAddress)}`;
    const windowMs = failureWindowSeconds * 1000;
    return {
      peek: () => peekRateWindow(this.deps.db, bucket, maxFailuresPerAddress, windowMs),
      take: () => takeRateWindow(this.deps.db, bucket, maxFailuresPerAddress, windowMs),
    };
  }

  async #chooseMembership(user: store.UserRow, organizationId: number | undefined) {
    if (organizationId !== undefined) {
      const membership = await store.findMembership(this.deps.db, user.id, organizationId);
      if (!membership) throw forbidden('You are not a member of this organization');
      return membership;
    }
    const memberships = await store.listMemberships(this.deps.db, user.id);
    const chosen = memberships.find((m) => m.organizationId === user.lastOrganizationId) ?? memberships[0];
    if (!chosen) throw forbidden('This account does not belong to any organization');
    return chosen;
  }

  /** Creates a verification token for `user` and queues the mail carrying it (commits with `ex`). */
  async queueVerificationMail(ex: Executor, jobs: JobEnqueuer, user: store.UserRow): Promise<void> {
    const token = randomToken(32);
    await store.insertEmailToken(ex, {
      userId: user.id,
      purpose: 'verify_email',
      tokenHash: sha256Hex(token),
      expiresAt: new Date(Date.now() + VERIFY_EMAIL_TTL_MS),
    });
    // The console's page confirms the address and carries on signed in; the API's own GET link
    // (`/api/v1/auth/verify-email?token=`) does the same for clients without the console.
    const link = `${this.deps.config.publicUrl}/console/verify?token=${token}`;
    await this.deps.mailer.queue(jobs, {
      to: user.email,
      subject: 'Verify your Switchboard email address',
      text:
        `Hello ${user.firstName || user.email},\n\n` +
        `Confirm your email address by opening this link within 48 hours:\n\n${link}\n\n` +
        // One labelled line, for a person or a script that POSTs the token (README, First steps).
        'Or send the token to POST /api/v1/auth/verify-email as {"token": "..."}:\n\n' +
        `Verification token: ${token}\n\n` +
        'If you did not create a Switchboard account, ignore this mail.\n',
    });
  }

  /** Opens a login session: access token, rotating refresh token, session cookie and CSRF token. */
  async openSession(
    ex: Executor,
    userId: number,
    organizationId: number,
    role: Role,
    userAgent: string | null,
  ): Promise<IssuedSession> {
    const refreshSecret = randomToken(32);
    const cookieSecret = randomToken(32);
    const csrfToken = randomToken(24);
    const expiresAt = new Date(Date.now() + this.deps.config.sessionTtlSeconds * 1000);
    const session = await store.insertSession(ex, {
      userId,
      organizationId,
      refreshTokenHash: sha256Hex(refreshSecret),
      cookieTokenHash: sha256Hex(cookieSecret),
      csrfTokenHash: sha256Hex(csrfToken),
      expiresAt,
      userAgent: userAgent?.slice(0, 500) ?? null,
    });
    const issued = await this.#issue(
      session.id,
      userId,
      { organizationId, role },
      `${session.id}.${refreshSecret}`,
      expiresAt,
    );
    return { ...issued, cookieToken: `${session.id}.${cookieSecret}`, csrfToken };
  }

  // ---- accounts, as the users domain changes them (in the caller's transaction) --------------

  /** Creates an account; undefined when the email is taken. */
  createUser(
    ex: Executor,
    values: Parameters<typeof store.insertUser>[1],
  ): Promise<store.UserRow | undefined> {
    return store.insertUser(ex, values);
  }

  /** Changes a user's own fields (a changed email must be verified again: see `readdressed`). */
  updateUser(
    ex: Executor,
    userId: number,
    changes: Parameters<typeof store.updateUser>[2],
  ): Promise<store.UserRow | undefined> {
    return store.updateUser(ex, userId, changes);
  }

  /**
   * The user's email changed: tokens mailed to the old address must not verify the new one, which
   * gets a verification mail of its own.
   */
  async readdressed(ex: Executor, jobs: JobEnqueuer, user: store.UserRow): Promise<void> {
    await store.revokeEmailTokens(ex, user.id, 'verify_email');
    await this.queueVerificationMail(ex, jobs, user);
  }

  /** Ends every live session of the user except `keepSessionId`; returns how many ended. */
  endOtherSessions(ex: Executor, userId: number, keepSessionId: string | null): Promise<number> {
    return store.revokeOtherSessions(ex, userId, keepSessionId);
  }

  /**
   * An accepted invitation: the address it was mailed to is verified, the user becomes a member with
   * `role` (unless one already) and the organization becomes their current one.
   */
  async join(ex: Executor, userId: number, organizationId: number, role: Role): Promise<void> {
    await store.markEmailVerified(ex, userId);
    await store.addMembership(ex, userId, organizationId, role);
    await store.setLastOrganization(ex, userId, organizationId);
  }

  // ---- founders, as the organizations domain creates organizations (its OrganizationFounders) ----

  /** The creator of a new organization becomes its admin member. */
  addFounder(ex: Executor, userId: number, organizationId: number): Promise<void> {
    return store.insertMembership(ex, userId, organizationId, 'admin');
  }

  /** Claims the user's one-time trial credits; true only the first time, even under concurrency. */
  claimTrialCredits(ex: Executor, userId: number): Promise<boolean> {
    return store.claimTrialCredits(ex, userId);
  }

  async #issue(
    sessionId: string,
    userId: number,
    membership: { organizationId: number; role: Role },
    refreshToken: string,
    sessionExpiresAt: Date,
  ): Promise<IssuedSession> {
    const accessToken = await this.deps.tokens.issue({
      userId,
      organizationId: membership.organizationId,
      role: membership.role,
      sessionId,
    });
    return { accessToken, expiresIn: this.deps.tokens.ttlSeconds, refreshToken, sessionExpiresAt };
  }
}

function organizationOf(membership: store.MembershipView) {
  return { id: membership.organizationId, name: membership.name, slug: membership.slug };
}
