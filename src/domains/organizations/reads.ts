/**
 * What other domains may read of organizations (tenant-scoped): the organization itself and its
 * sealed provider credentials. Both are written only here.
 */
export type { CredentialRow, OrganizationRow } from './store.js';
export { findOwnOrganization, listCredentials } from './store.js';
