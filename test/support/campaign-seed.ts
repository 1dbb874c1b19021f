/**
 * Campaign rows for the progress tests: a campaign made through the real routes, then contacts,
 * calls and executions written directly, as the campaign executor writes them.
 */
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { expect } from 'vitest';
import {
  type CampaignStatus,
  type ContactStatus,
  calls,
  campaignContacts,
  campaignExecutions,
  campaigns,
} from '../../src/db/schema/index.js';
import type { Factories, TestUser } from './factories.js';
import type { TestPlatform } from './harness.js';

let serial = 0;

/** A new user (admin of a new organization) with an assistant and a draft call campaign. */
export async function ownCampaign(
  t: TestPlatform,
  f: Factories,
  user?: TestUser,
): Promise<{ user: TestUser; campaignId: number }> {
  const owner = user ?? (await f.user());
  serial += 1;
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: owner.headers,
    payload: { name: `Progress caller ${serial} ${randomBytes(3).toString('hex')}` },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
  const campaign = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: owner.headers,
    payload: { name: `Progress ${serial}`, campaign_type: 'mixed', assistant_id: assistant.json().id },
  });
  expect(campaign.statusCode, campaign.body).toBe(201);
  return { user: owner, campaignId: campaign.json().id };
}

export async function setCampaign(
  t: TestPlatform,
  campaignId: number,
  values: { status?: CampaignStatus; startedAt?: Date; completedAt?: Date; updatedAt?: Date },
): Promise<void> {
  await t.database.db.update(campaigns).set(values).where(eq(campaigns.id, campaignId));
}

/**
 * One contact per status, in order; phone numbers +1415555<base + i>. `attempts[i]` is the contact's
 * attempt counter (the executor adds one per execution it makes); 0 when not given.
 */
export async function addContacts(
  t: TestPlatform,
  user: TestUser,
  campaignId: number,
  statuses: ContactStatus[],
  base = 1000,
  attempts: number[] = [],
): Promise<Array<{ id: number; phoneNumber: string }>> {
  return t.database.db
    .insert(campaignContacts)
    .values(
      statuses.map((status, i) => ({
        organizationId: user.organizationId,
        campaignId,
        phoneNumber: `+1415555${String(base + i).padStart(4, '0')}`,
        name: `Contact ${base + i}`,
        status,
        attempts: attempts[i] ?? 0,
      })),
    )
    .returning({ id: campaignContacts.id, phoneNumber: campaignContacts.phoneNumber });
}

export async function addCall(
  t: TestPlatform,
  user: TestUser,
  values: { duration: number | null; cost: number | null; to?: string },
): Promise<number> {
  const [call] = await t.database.db
    .insert(calls)
    .values({
      organizationId: user.organizationId,
      provider: 'carrier_a',
      direction: 'outbound',
      fromPhoneNumber: '+14155550100',
      toPhoneNumber: values.to ?? '+14155551000',
      customerPhoneNumber: values.to ?? '+14155551000',
      status: 'completed',
      duration: values.duration,
      cost: values.cost,
    })
    .returning({ id: calls.id });
  return call!.id;
}

export type NewExecution = Omit<typeof campaignExecutions.$inferInsert, 'organizationId' | 'campaignId'>;

export async function addExecutions(
  t: TestPlatform,
  user: TestUser,
  campaignId: number,
  rows: NewExecution[],
): Promise<number[]> {
  const inserted = await t.database.db
    .insert(campaignExecutions)
    .values(rows.map((row) => ({ ...row, organizationId: user.organizationId, campaignId })))
    .returning({ id: campaignExecutions.id });
  return inserted.map((row) => row.id);
}
