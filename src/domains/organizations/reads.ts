/**
 * What other domains may read of organizations (tenant-scoped): the organization itself, its
 * sealed provider credentials and its sealed webhook secret. All are written only here (the webhook
 * secret through `OrganizationService`, on the webhooks domain's behalf).
 */
export type { CredentialRow, OrganizationRow } from './store.js';
export { findOwnOrganization, findSealedWebhookSecret, listCredentials } from './store.js';
