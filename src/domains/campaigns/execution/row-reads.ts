/**
 * The rows of an attempt, read by id: its campaign, contact and execution — plainly, or under the row
 * locks of the lock order (executor.ts: campaign, then contact, then execution). They are read for
 * every attempt and every outcome, so each statement is built once (db/built.ts).
 */
import { and, eq, sql } from 'drizzle-orm';
import { scopedStatement } from '../../../db/built.js';
import type { Executor } from '../../../db/client.js';
import { campaignContacts, campaignExecutions, campaigns } from '../../../db/schema/index.js';
import { ownedByPlaceholder, type Tenant } from '../../../db/tenant.js';

export type CampaignRecord = typeof campaigns.$inferSelect;
export type ExecutionRecord = typeof campaignExecutions.$inferSelect;
export type ContactRecord = typeof campaignContacts.$inferSelect;

/** The campaign, read plainly or under one of the row locks of the lock order (executor.ts). */
function campaignRecord(
  ex: Executor,
  tenant: Tenant,
  id: number,
  lock?: 'no key update' | 'share',
): Promise<CampaignRecord | undefined> {
  const statement = lock ? campaignLocked[lock] : campaignRead;
  return statement(ex, tenant, { id }).then(([row]) => row);
}

const campaignById = (ex: Executor) =>
  ex
    .select()
    .from(campaigns)
    .where(and(ownedByPlaceholder(campaigns), eq(campaigns.id, sql.placeholder('id'))));
const campaignRead = scopedStatement((ex) => campaignById(ex));
const campaignLocked = {
  'no key update': scopedStatement((ex) => campaignById(ex).for('no key update')),
  share: scopedStatement((ex) => campaignById(ex).for('share')),
};

export const findCampaignRecord = (ex: Executor, tenant: Tenant, id: number) =>
  campaignRecord(ex, tenant, id);

/** The campaign, locked for a change: moves, dispatches and attempt outcomes take turns on it. */
export const lockCampaign = (ex: Executor, tenant: Tenant, id: number) =>
  campaignRecord(ex, tenant, id, 'no key update');

/**
 * The campaign, share-locked: an attempt claiming its execution reads the campaign's status and
 * keeps it from changing until the claim commits (a pause or stop waits, or the claim sees it),
 * while the campaign's other attempts claim theirs at the same time.
 */
export const shareCampaign = (ex: Executor, tenant: Tenant, id: number) =>
  campaignRecord(ex, tenant, id, 'share');

/**
 * The three rows an attempt's outcome changes, locked in the order of every campaign transaction
 * (executor.ts): its campaign, then its contact, then the execution itself — read again under its
 * lock, as it may have moved on since `execution` was read.
 */
export async function lockAttempt(
  ex: Executor,
  tenant: Tenant,
  execution: Pick<ExecutionRecord, 'id' | 'campaignId' | 'contactId'>,
): Promise<{
  campaign: CampaignRecord | undefined;
  contact: ContactRecord | undefined;
  execution: ExecutionRecord | undefined;
}> {
  const campaign = await lockCampaign(ex, tenant, execution.campaignId);
  const contact = await findContact(ex, tenant, execution.contactId, { lock: true });
  const locked = await findExecution(ex, tenant, execution.id, { lock: true });
  return { campaign, contact, execution: locked };
}

export async function findExecution(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { lock?: boolean } = {},
): Promise<ExecutionRecord | undefined> {
  const [row] = await (options.lock ? executionLocked : executionRead)(ex, tenant, { id });
  return row;
}

const executionById = (ex: Executor) =>
  ex
    .select()
    .from(campaignExecutions)
    .where(and(ownedByPlaceholder(campaignExecutions), eq(campaignExecutions.id, sql.placeholder('id'))));
const executionRead = scopedStatement((ex) => executionById(ex));
const executionLocked = scopedStatement((ex) => executionById(ex).for('no key update'));

/**
 * An attempt about to run: its execution with its campaign and contact, read in one statement (not
 * locked: the claim share-locks the campaign and claims the execution under its own conditions).
 */
export async function attemptRows(
  ex: Executor,
  tenant: Tenant,
  executionId: number,
): Promise<
  { execution: ExecutionRecord; campaign: CampaignRecord | null; contact: ContactRecord | null } | undefined
> {
  const [row] = await attemptRowsStatement(ex, tenant, { id: executionId });
  return row;
}

// The joined rows are the execution's organization's too (as the tenant filter of each would say).
const attemptRowsStatement = scopedStatement((ex) =>
  ex
    .select({ execution: campaignExecutions, campaign: campaigns, contact: campaignContacts })
    .from(campaignExecutions)
    .leftJoin(
      campaigns,
      and(
        eq(campaigns.id, campaignExecutions.campaignId),
        eq(campaigns.organizationId, campaignExecutions.organizationId),
      ),
    )
    .leftJoin(
      campaignContacts,
      and(
        eq(campaignContacts.id, campaignExecutions.contactId),
        eq(campaignContacts.organizationId, campaignExecutions.organizationId),
      ),
    )
    .where(and(ownedByPlaceholder(campaignExecutions), eq(campaignExecutions.id, sql.placeholder('id')))),
);

/**
 * The execution whose attempt is this call or this message, if one is — not locked: its outcome
 * locks it after its campaign and contact (`lockAttempt`).
 */
export async function executionOf(
  ex: Executor,
  tenant: Tenant,
  attempt: { callId: number } | { messageId: string },
): Promise<ExecutionRecord | undefined> {
  if ('callId' in attempt) {
    const [row] = await executionOfCall(ex, tenant, { callId: attempt.callId });
    return row;
  }
  const match = eq(campaignExecutions.smsId, attempt.messageId);
  const [row] = await ex.select().from(campaignExecutions).where(tenant.where(campaignExecutions, match));
  return row;
}

const executionOfCall = scopedStatement((ex) =>
  ex
    .select()
    .from(campaignExecutions)
    .where(
      and(ownedByPlaceholder(campaignExecutions), eq(campaignExecutions.callId, sql.placeholder('callId'))),
    ),
);

export async function findContact(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { lock?: boolean } = {},
): Promise<ContactRecord | undefined> {
  const [row] = await (options.lock ? contactLocked : contactRead)(ex, tenant, { id });
  return row;
}

const contactById = (ex: Executor) =>
  ex
    .select()
    .from(campaignContacts)
    .where(and(ownedByPlaceholder(campaignContacts), eq(campaignContacts.id, sql.placeholder('id'))));
const contactRead = scopedStatement((ex) => contactById(ex));
const contactLocked = scopedStatement((ex) => contactById(ex).for('no key update'));
