/**
 * SQL of invitations, and of an organization's members as this domain lists them. Users and
 * memberships themselves are identity's: written there (IdentityService), read here.
 */
import { and, asc, eq, gt, isNull, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { invitations, memberships, organizations, users } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import type { Role } from '../identity/principal.js';

export type InvitationRow = typeof invitations.$inferSelect;

export interface MemberRow {
  id: number;
  email: string;
  firstName: string;
  lastName: string;
  emailVerifiedAt: Date | null;
  role: Role;
  joinedAt: Date;
}

export async function listMembers(ex: Executor, tenant: Tenant): Promise<MemberRow[]> {
  return ex
    .select({
      id: users.id,
      email: users.email,
      firstName: users.firstName,
      lastName: users.lastName,
      emailVerifiedAt: users.emailVerifiedAt,
      role: memberships.role,
      joinedAt: memberships.createdAt,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(tenant.owns(memberships))
    .orderBy(asc(users.id));
}

export async function isMember(ex: Executor, tenant: Tenant, email: string): Promise<boolean> {
  const rows = await ex
    .select({ id: users.id })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(tenant.where(memberships, eq(users.email, email)))
    .limit(1);
  return rows.length > 0;
}

/** Revokes the organization's pending invitations of `email` (a new one replaces them). */
export async function revokePendingInvitations(ex: Executor, tenant: Tenant, email: string): Promise<void> {
  await ex
    .update(invitations)
    .set({ revokedAt: sql`now()` })
    .where(
      tenant.where(
        invitations,
        eq(invitations.email, email),
        isNull(invitations.acceptedAt),
        isNull(invitations.revokedAt),
      ),
    );
}

export async function insertInvitation(
  ex: Executor,
  tenant: Tenant,
  values: {
    email: string;
    firstName: string;
    lastName: string;
    role: Role;
    tokenHash: string;
    invitedByUserId: number;
    expiresAt: Date;
  },
): Promise<InvitationRow> {
  const [row] = await ex
    .insert(invitations)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

const pending = (tokenHash: string) =>
  and(
    eq(invitations.tokenHash, tokenHash),
    isNull(invitations.acceptedAt),
    isNull(invitations.revokedAt),
    gt(invitations.expiresAt, sql`now()`),
  );

/**
 * A pending (unused, unrevoked, unexpired) invitation with its organization's name. Looked up by
 * the token itself, which is the credential, so it is not tenant-scoped.
 */
export async function findPendingInvitation(
  ex: Executor,
  tokenHash: string,
): Promise<(InvitationRow & { organizationName: string }) | undefined> {
  const [row] = await ex
    .select({ invitation: invitations, organizationName: organizations.name })
    .from(invitations)
    .innerJoin(organizations, eq(organizations.id, invitations.organizationId))
    .where(pending(tokenHash))
    .limit(1);
  return row ? { ...row.invitation, organizationName: row.organizationName } : undefined;
}

/** Marks a pending invitation accepted; false when it was not pending any more (used, revoked, expired). */
export async function markInvitationAccepted(ex: Executor, tokenHash: string): Promise<boolean> {
  const rows = await ex
    .update(invitations)
    .set({ acceptedAt: sql`now()` })
    .where(pending(tokenHash))
    .returning({ id: invitations.id });
  return rows.length === 1;
}
