/**
 * What other domains may read of organizations (tenant-scoped): the organization itself, its
 * sealed provider credentials and its sealed webhook secret. All are written only here (the webhook
 * secret through `OrganizationService`, on the webhooks domain's behalf). One read is platform-wide
 * and says so: `organizationsWithTrunkOnPlatform`, the SIP agent's list of trunks to keep in view.
 */
export type { CredentialRow, OrganizationRow } from './store.js';
export {
  findOwnOrganization,
  findSealedWebhookSecret,
  listCredentials,
  organizationsWithTrunkOnPlatform,
} from './store.js';
