/**
 * Campaign schedules (platform-api.md "Campaign schedule", "States and transitions"): setting one
 * moves a draft to `scheduled` (or replaces the schedule of a scheduled campaign), `immediate` and
 * unschedule move it back to `draft`. Every change is one transaction that starts with a conditional
 * status UPDATE — the check and the move cannot be separated by another request — and enqueues the
 * campaign's `campaign.wakeup` job for `next_run_at`. The job's handler (the executor) starts the
 * campaign when the time has come and advances recurring schedules with `nextRunAfter`; a wakeup left
 * over from a replaced or cleared schedule finds nothing due and does nothing.
 */
import type { Db, Executor } from '../../../db/client.js';
import type { CampaignStatus } from '../../../db/schema/index.js';
import type { Tenant } from '../../../db/tenant.js';
import type { JobQueue } from '../../../queue/queue.js';
import { conflict, notFound, ValidationFailed } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import * as store from '../store.js';
import { DEFAULT_TIMEZONE, nextRunAfter, type ParsedSchedule, parseSchedule } from './recurrence.js';
import * as scheduleStore from './store.js';

/** The statuses a schedule may be set in (every other one answers 409). */
const SCHEDULABLE: readonly CampaignStatus[] = ['draft', 'scheduled'];

export interface ScheduleAnswer {
  success: true;
  message: string;
}

export interface ScheduleState {
  campaignId: number;
  /** `immediate` when the campaign has no schedule (it runs when started). */
  scheduleType: 'immediate' | 'scheduled' | 'recurring';
  scheduledAt: Date | null;
  timezone: string;
  recurringConfig: Record<string, unknown> | null;
  nextRunAt: Date | null;
  lastRunAt: Date | null;
}

export class CampaignScheduleService {
  readonly #now: () => Date;

  constructor(private readonly deps: { db: Db; queue: JobQueue; now?: () => Date }) {
    this.#now = deps.now ?? (() => new Date());
  }

  /** POST …/schedule: validates `body` (400 with every problem), then applies the transition. */
  async set(principal: Principal, campaignId: number, body: unknown): Promise<ScheduleAnswer> {
    const now = this.#now();
    const parsed = parseSchedule(body, now);
    if (!parsed.ok) throw new ValidationFailed(parsed.issues, 400);
    const schedule = parsed.schedule;
    if (schedule.scheduleType === 'immediate') return this.#clear(principal.tenant, campaignId, SCHEDULABLE);
    return this.#schedule(principal.tenant, campaignId, schedule, now);
  }

  /** POST …/unschedule: scheduled → draft, its schedule deleted; 409 in every other status. */
  async unschedule(principal: Principal, campaignId: number): Promise<ScheduleAnswer> {
    return this.#clear(principal.tenant, campaignId, ['scheduled']);
  }

  /** GET …/schedule. */
  async get(principal: Principal, campaignId: number): Promise<ScheduleState> {
    const { db } = this.deps;
    const [status, row] = await Promise.all([
      store.statusOf(db, principal.tenant, campaignId),
      scheduleStore.findSchedule(db, principal.tenant, campaignId),
    ]);
    if (status === undefined) throw notFound('Campaign not found');
    if (!row) {
      return {
        campaignId,
        scheduleType: 'immediate',
        scheduledAt: null,
        timezone: DEFAULT_TIMEZONE,
        recurringConfig: null,
        nextRunAt: null,
        lastRunAt: null,
      };
    }
    return {
      campaignId,
      scheduleType: row.scheduleType,
      scheduledAt: row.scheduledAt,
      timezone: row.timezone,
      recurringConfig: row.recurringConfig,
      nextRunAt: row.nextRunAt,
      lastRunAt: row.lastRunAt,
    };
  }

  async #schedule(
    tenant: Tenant,
    campaignId: number,
    schedule: Exclude<ParsedSchedule, { scheduleType: 'immediate' }>,
    now: Date,
  ): Promise<ScheduleAnswer> {
    const { scheduleType, scheduledAt, timezone, recurringConfig } = schedule;
    // parseSchedule refuses a schedule with no run left, so there is a next run.
    const nextRunAt = nextRunAfter({ scheduleType, scheduledAt, timezone, recurringConfig }, now) as Date;
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      if (!(await scheduleStore.moveStatus(tx, tenant, campaignId, SCHEDULABLE, 'scheduled')))
        throw await refusal(tx, tenant, campaignId, SCHEDULABLE);
      await scheduleStore.saveSchedule(tx, tenant, campaignId, {
        scheduleType,
        scheduledAt,
        timezone,
        recurringConfig: recurringConfig ? { ...recurringConfig } : null,
        nextRunAt,
      });
      await jobs.enqueue(
        'campaign.wakeup',
        { campaign_id: campaignId, organization_id: tenant.organizationId },
        // Rounded up, so the wakeup never comes before next_run_at; measured on the real clock,
        // because pg-boss adds the seconds to the database's own now().
        { startAfterSeconds: Math.max(0, Math.ceil((nextRunAt.getTime() - Date.now()) / 1000)) },
      );
    });
    const at = nextRunAt.toISOString();
    return {
      success: true,
      message:
        scheduleType === 'scheduled'
          ? `Campaign scheduled for ${at}`
          : `Recurring schedule set; the first run is at ${at}`,
    };
  }

  /** Back to draft from one of `from`, the schedule deleted. */
  async #clear(tenant: Tenant, campaignId: number, from: readonly CampaignStatus[]): Promise<ScheduleAnswer> {
    const hadSchedule = await this.deps.queue.retryingTransaction(async (tx) => {
      if (!(await scheduleStore.moveStatus(tx, tenant, campaignId, from, 'draft')))
        throw await refusal(tx, tenant, campaignId, from);
      return scheduleStore.deleteSchedule(tx, tenant, campaignId);
    });
    return {
      success: true,
      message: hadSchedule
        ? 'Schedule cleared; the campaign is a draft and runs when it is started'
        : 'The campaign has no schedule; it runs when it is started',
    };
  }
}

/** Why the status move found no row: not the tenant's campaign (404), or a status that refuses (409). */
async function refusal(ex: Executor, tenant: Tenant, id: number, allowed: readonly CampaignStatus[]) {
  const status = await store.statusOf(ex, tenant, id);
  if (status === undefined) return notFound('Campaign not found');
  return conflict(`The campaign is ${status}; this needs a ${allowed.join(' or ')} campaign`);
}
