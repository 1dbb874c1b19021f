/** The JSON of an organization's member and of an invitation: the TypeBox schemas and the functions that fill them. */
import { Type } from 'typebox';
import { iso, Timestamp } from '../../lib/schema.js';
import { RoleOut } from '../identity/views.js';
import type { InvitationRow, MemberRow } from './store.js';

export const MemberOut = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    role: RoleOut,
    is_verified: Type.Boolean(),
    joined_at: Timestamp,
  },
  { title: 'Member' },
);

export const memberView = (m: MemberRow) => ({
  id: m.id,
  email: m.email,
  first_name: m.firstName,
  last_name: m.lastName,
  role: m.role,
  is_verified: m.emailVerifiedAt !== null,
  joined_at: iso(m.joinedAt),
});

export const InvitationOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    role: RoleOut,
    expires_at: Timestamp,
    created_at: Timestamp,
  },
  { title: 'Invitation' },
);

export const invitationView = (row: InvitationRow) => ({
  id: row.id,
  organization_id: row.organizationId,
  email: row.email,
  first_name: row.firstName,
  last_name: row.lastName,
  role: row.role,
  expires_at: iso(row.expiresAt),
  created_at: iso(row.createdAt),
});
