/**
 * What other domains may read of identity's tables: users, their memberships, and the columns a
 * principal is made of (api-keys loads key principals with them). Users and memberships are written
 * only here, through IdentityService. A user belongs to no single organization, so these lookups
 * are by user id or email; a membership names its organization.
 */
export type { MembershipView, PrincipalRow, UserRow } from './store.js';
export { findMembership, findUserByEmail, findUserById, principalColumns } from './store.js';
