/** What other domains may read of campaigns (tenant-scoped); campaigns are written only here. */
export { unfinishedCampaignsOfAssistant } from './store.js';
