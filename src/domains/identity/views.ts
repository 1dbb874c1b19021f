/** JSON shapes of the identity domain: the TypeBox schema and the function that fills it, side by side. */
import { Type } from 'typebox';
import { iso, literalUnion, NullableTimestamp, OpenObject, Timestamp } from '../../lib/schema.js';
import { AREAS, LEVELS, type Principal, type Role } from './principal.js';
import type { SignedIn } from './service.js';
import type { MembershipView, UserRow } from './store.js';

export const UserOut = Type.Object(
  {
    id: Type.Integer(),
    email: Type.String(),
    first_name: Type.String(),
    last_name: Type.String(),
    is_verified: Type.Boolean(),
    email_verified_at: NullableTimestamp,
    preferences: OpenObject,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'User' },
);

export function userView(user: UserRow) {
  return {
    id: user.id,
    email: user.email,
    first_name: user.firstName,
    last_name: user.lastName,
    is_verified: user.emailVerifiedAt !== null,
    email_verified_at: iso(user.emailVerifiedAt),
    preferences: user.preferences,
    created_at: iso(user.createdAt),
    updated_at: iso(user.updatedAt),
  };
}

export const RoleOut = Type.Union([Type.Literal('admin'), Type.Literal('user')]);

export const OrganizationSummary = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  slug: Type.String(),
});

export const TokenBody = Type.Object(
  {
    access_token: Type.String(),
    token_type: Type.Literal('bearer'),
    expires_in: Type.Integer({ description: 'Seconds until the access token expires.' }),
    refresh_token: Type.String({ description: 'Single use: each refresh returns a new one.' }),
    csrf_token: Type.Optional(
      Type.String({
        description:
          'Send as X-CSRF-Token on state-changing requests authenticated only by the session cookie.',
      }),
    ),
    user: UserOut,
    organization: OrganizationSummary,
    role: RoleOut,
  },
  { title: 'TokenBody' },
);

export function tokenView(signedIn: SignedIn) {
  return {
    access_token: signedIn.session.accessToken,
    token_type: 'bearer' as const,
    expires_in: signedIn.session.expiresIn,
    refresh_token: signedIn.session.refreshToken,
    ...(signedIn.session.csrfToken ? { csrf_token: signedIn.session.csrfToken } : {}),
    user: userView(signedIn.user),
    organization: signedIn.organization,
    role: signedIn.role,
  };
}

export const ProfileOut = Type.Object(
  {
    ...UserOut.properties,
    organization_id: Type.Integer(),
    role: RoleOut,
    organizations: Type.Array(Type.Object({ ...OrganizationSummary.properties, role: RoleOut })),
  },
  { title: 'Profile' },
);

export function profileView(
  user: UserRow,
  organizationId: number,
  role: Role,
  memberships: MembershipView[],
) {
  return {
    ...userView(user),
    organization_id: organizationId,
    role,
    organizations: memberships.map((m) => ({
      id: m.organizationId,
      name: m.name,
      slug: m.slug,
      role: m.role,
    })),
  };
}

const LevelOut = literalUnion(LEVELS);

export const WhoAmIOut = Type.Object(
  {
    via: Type.Union([Type.Literal('api_key'), Type.Literal('jwt'), Type.Literal('cookie')]),
    user_id: Type.Integer(),
    email: Type.String(),
    is_verified: Type.Boolean(),
    organization_id: Type.Integer(),
    role: RoleOut,
    api_key: Type.Union([
      Type.Object({
        id: Type.Integer(),
        permissions: Type.Object(
          {},
          { additionalProperties: LevelOut, description: `Areas: ${AREAS.join(', ')}` },
        ),
        rate_limit: Type.Union([Type.Integer(), Type.Null()]),
      }),
      Type.Null(),
    ]),
  },
  { title: 'WhoAmI' },
);

export function whoAmIView(principal: Principal) {
  return {
    via: principal.via,
    user_id: principal.user.id,
    email: principal.user.email,
    is_verified: principal.user.verified,
    organization_id: principal.organization.id,
    role: principal.role,
    api_key: principal.apiKey
      ? {
          id: principal.apiKey.id,
          permissions: principal.apiKey.permissions,
          rate_limit: principal.apiKey.rateLimit,
        }
      : null,
  };
}
