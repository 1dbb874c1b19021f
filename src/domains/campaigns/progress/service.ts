/**
 * Reading how a campaign is going: its executions page by page, and its progress (contacts by
 * status, metrics, cost estimate, recent activity). The REST routes and the live feed both call it.
 */
import type { Db } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import type { Page } from '../../../lib/page.js';
import { notFound } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import { statusOf } from '../store.js';
import { type ExecutionRow, listExecutions, progressOf } from './store.js';
import { type ProgressView, progressView } from './views.js';

export class CampaignProgressService {
  constructor(private readonly deps: { db: Db }) {}

  /** A page of the campaign's executions, newest first; 404 when the campaign is not the caller's. */
  async executions(
    principal: Principal,
    campaignId: number,
    page: Page,
  ): Promise<{ rows: ExecutionRow[]; total: number }> {
    if (!(await statusOf(this.deps.db, principal.tenant, campaignId))) throw notFound('Campaign not found');
    return listExecutions(this.deps.db, principal.tenant, campaignId, page);
  }

  /** The campaign's progress; 404 when the campaign is not the caller's. */
  async progress(principal: Principal, campaignId: number): Promise<ProgressView> {
    const progress = await this.progressOf(principal.tenant, campaignId);
    if (!progress) throw notFound('Campaign not found');
    return progress;
  }

  /** The progress, or undefined when the campaign is not (or no longer) the tenant's. */
  async progressOf(tenant: Tenant, campaignId: number): Promise<ProgressView | undefined> {
    const row = await progressOf(this.deps.db, tenant, campaignId);
    return row && progressView(row);
  }
}
