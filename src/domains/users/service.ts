/**
 * Users as members of an organization: the profile, the password, the member list, and invitations
 * (a single-use mailed token, valid 7 days, that creates the account or adds an existing one).
 */
import type { Db } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import { randomToken, sha256Hex } from '../../lib/crypto.js';
import type { Mailer } from '../../lib/mail.js';
import { hashPassword, verifyPassword } from '../../lib/passwords.js';
import { isTimeZone } from '../../lib/time.js';
import type { JobQueue } from '../../queue/queue.js';
import { badRequest, conflict, internalError, invalidField, notFound, unauthorized } from '../errors.js';
import type { Principal, Role } from '../identity/principal.js';
import type { IdentityChanges } from '../identity/principal-cache.js';
import { findMembership, findUserByEmail, findUserById, type UserRow } from '../identity/reads.js';
import { type IdentityService, normalizeEmail, type SignedIn } from '../identity/service.js';
import * as store from './store.js';

export const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export interface ProfileChanges {
  firstName?: string;
  lastName?: string;
  email?: string;
  preferences?: Record<string, unknown>;
}

export class UserService {
  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      mailer: Mailer;
      identity: IdentityService;
      changes: IdentityChanges;
      publicUrl: string;
    },
  ) {}

  /** Changes the caller's profile. A new email address must be verified again (a mail is sent). */
  async updateProfile(principal: Principal, changes: ProfileChanges): Promise<UserRow> {
    const timezone = changes.preferences?.timezone;
    if (timezone !== undefined && (typeof timezone !== 'string' || !isTimeZone(timezone))) {
      throw invalidField(['body', 'preferences', 'timezone'], 'Unknown time zone');
    }
    const user = await this.deps.queue
      .transaction(async (tx, jobs) => {
        const current = await findUserById(tx, principal.user.id);
        if (!current) throw unauthorized();
        const email = changes.email === undefined ? undefined : normalizeEmail(changes.email);
        const emailChanged = email !== undefined && email !== current.email;
        const updated = await this.deps.identity.updateUser(tx, current.id, {
          ...(changes.firstName !== undefined ? { firstName: changes.firstName.trim() } : {}),
          ...(changes.lastName !== undefined ? { lastName: changes.lastName.trim() } : {}),
          ...(changes.preferences !== undefined ? { preferences: changes.preferences } : {}),
          ...(emailChanged ? { email, emailVerifiedAt: null } : {}),
        });
        if (!updated) throw unauthorized();
        if (emailChanged) await this.deps.identity.readdressed(tx, jobs, updated);
        return updated;
      })
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) throw conflict('An account with this email already exists');
        throw error;
      });
    await this.deps.changes.userChanged(user.id);
    return user;
  }

  /**
   * Sets a new password. A user without one (signed up elsewhere) sends an empty `current_password`.
   * Every other session of the user ends; the caller's own stays.
   */
  async changePassword(principal: Principal, currentPassword: string, newPassword: string): Promise<number> {
    const user = await findUserById(this.deps.db, principal.user.id);
    if (!user) throw unauthorized();
    if (user.passwordHash === null) {
      if (currentPassword !== '')
        throw badRequest('This account has no password yet: send an empty current_password');
    } else if (!(await verifyPassword(currentPassword, user.passwordHash))) {
      throw badRequest('Current password is incorrect');
    }
    const passwordHash = await hashPassword(newPassword);
    const ended = await this.deps.db.transaction(async (tx) => {
      await this.deps.identity.updateUser(tx, user.id, { passwordHash });
      return this.deps.identity.endOtherSessions(tx, user.id, principal.sessionId);
    });
    await this.deps.changes.userChanged(user.id);
    return ended;
  }

  members(principal: Principal): Promise<store.MemberRow[]> {
    return store.listMembers(this.deps.db, principal.tenant);
  }

  async invite(
    principal: Principal,
    input: { email: string; firstName: string; lastName: string; role: Role },
  ): Promise<store.InvitationRow> {
    const email = normalizeEmail(input.email);
    const token = randomToken(32);
    return this.deps.queue.transaction(async (tx, jobs) => {
      if (await store.isMember(tx, principal.tenant, email)) {
        throw conflict('This person is already a member of the organization');
      }
      await store.revokePendingInvitations(tx, principal.tenant, email);
      const invitation = await store.insertInvitation(tx, principal.tenant, {
        email,
        firstName: input.firstName.trim(),
        lastName: input.lastName.trim(),
        role: input.role,
        tokenHash: sha256Hex(token),
        invitedByUserId: principal.user.id,
        expiresAt: new Date(Date.now() + INVITATION_TTL_MS),
      });
      const organization = (await findMembership(tx, principal.user.id, principal.organization.id))?.name;
      const inviter =
        [principal.user.firstName, principal.user.lastName].filter(Boolean).join(' ') || principal.user.email;
      await this.deps.mailer.queue(jobs, {
        to: email,
        subject: `You are invited to ${organization ?? 'an organization'} on Switchboard`,
        text:
          `Hello ${invitation.firstName || email},\n\n` +
          `${inviter} invited you to join ${organization ?? 'their organization'} on Switchboard as ${input.role}.\n\n` +
          `Open it in the console to accept it within 7 days:\n\n${this.deps.publicUrl}/console/invitation?token=${token}\n\n` +
          `Or read it through the API:\n\n${this.deps.publicUrl}/api/v1/users/invitation/${token}\n\n` +
          'and accept it by sending this token, your password and its confirmation to:\n\n' +
          `POST ${this.deps.publicUrl}/api/v1/users/accept-invitation\n\n` +
          `Invitation token: ${token}\n\n` +
          'If you already have a Switchboard account, use its password.\n',
      });
      return invitation;
    });
  }

  async invitation(token: string): Promise<store.InvitationRow & { organizationName: string }> {
    const invitation = await store.findPendingInvitation(this.deps.db, sha256Hex(token));
    if (!invitation) throw notFound('Invitation not found or no longer valid');
    return invitation;
  }

  /**
   * Accepts an invitation: creates the account (or, for an existing one, checks its password) and
   * adds it to the organization with the invited role, verified. Returns a signed-in session there.
   */
  async acceptInvitation(token: string, password: string, userAgent: string | null): Promise<SignedIn> {
    const tokenHash = sha256Hex(token);
    const invitation = await store.findPendingInvitation(this.deps.db, tokenHash);
    if (!invitation) throw notFound('Invitation not found or no longer valid');
    const existing = await findUserByEmail(this.deps.db, invitation.email);
    if (existing?.passwordHash && !(await verifyPassword(password, existing.passwordHash))) {
      throw unauthorized('An account with this email exists: use its password to accept');
    }
    const passwordHash = existing?.passwordHash ? null : await hashPassword(password);
    const signedIn = await this.deps.db.transaction(async (tx) => {
      if (!(await store.markInvitationAccepted(tx, tokenHash)))
        throw notFound('Invitation not found or no longer valid');
      let user = existing && (await findUserById(tx, existing.id));
      if (!user) {
        user = await this.deps.identity.createUser(tx, {
          email: invitation.email,
          passwordHash,
          firstName: invitation.firstName,
          lastName: invitation.lastName,
        });
        if (!user) throw conflict('An account with this email was created meanwhile; try again');
      } else if (passwordHash) {
        await this.deps.identity.updateUser(tx, user.id, { passwordHash });
      }
      await this.deps.identity.join(tx, user.id, invitation.organizationId, invitation.role);
      const membership = await findMembership(tx, user.id, invitation.organizationId);
      const fresh = await findUserById(tx, user.id);
      if (!membership || !fresh) throw internalError('Membership not recorded');
      const session = await this.deps.identity.openSession(
        tx,
        fresh.id,
        membership.organizationId,
        membership.role,
        userAgent,
      );
      return {
        user: fresh,
        organization: { id: membership.organizationId, name: membership.name, slug: membership.slug },
        role: membership.role,
        session,
      };
    });
    await this.deps.changes.userChanged(signedIn.user.id);
    return signedIn;
  }
}
