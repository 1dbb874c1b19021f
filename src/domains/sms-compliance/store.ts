/** SQL of SMS compliance records (one per phone number; a resubmission replaces it). */
import { and, asc, eq, getTableColumns, ne, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { type ComplianceStatus, phoneNumbers, smsCompliance } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type ComplianceRow = typeof smsCompliance.$inferSelect;

/** A number of the organization and its compliance record, null when it was never submitted. */
export interface NumberCompliance {
  phoneNumberId: number;
  phoneNumber: string;
  record: ComplianceRow | null;
}

export type SubmissionValues = Pick<
  typeof smsCompliance.$inferInsert,
  | 'useCase'
  | 'businessName'
  | 'businessDescription'
  | 'sampleMessages'
  | 'websiteUrl'
  | 'contactEmail'
  | 'submittedByUserId'
>;

/** The organization's numbers, each with its record (both tenant-scoped, so a record never crosses over). */
function selectNumbers(ex: Executor, tenant: Tenant) {
  return ex
    .select({
      phoneNumberId: phoneNumbers.id,
      phoneNumber: phoneNumbers.phoneNumber,
      record: getTableColumns(smsCompliance),
    })
    .from(phoneNumbers)
    .leftJoin(
      smsCompliance,
      and(eq(smsCompliance.phoneNumberId, phoneNumbers.id), tenant.owns(smsCompliance)),
    );
}

export async function findNumberCompliance(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
): Promise<NumberCompliance | undefined> {
  const [row] = await selectNumbers(ex, tenant).where(
    tenant.where(phoneNumbers, eq(phoneNumbers.id, phoneNumberId)),
  );
  return row;
}

/** Every number of the organization in id order, submitted or not. */
export function listNumberCompliance(ex: Executor, tenant: Tenant): Promise<NumberCompliance[]> {
  return selectNumbers(ex, tenant).where(tenant.owns(phoneNumbers)).orderBy(asc(phoneNumbers.id));
}

/**
 * Inserts the submission, or replaces the number's earlier one and puts it back to `pending` (the
 * review fields cleared). An approved record is left alone: false then. The check is part of the
 * write, so a submission racing an approval cannot undo it.
 */
export async function upsertSubmission(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  values: SubmissionValues,
): Promise<boolean> {
  const review = {
    status: 'pending' as const,
    approvedAt: null,
    rejectionReason: null,
    reviewedByUserId: null,
  };
  const rows = await ex
    .insert(smsCompliance)
    .values({ ...values, ...review, phoneNumberId, organizationId: tenant.organizationId })
    .onConflictDoUpdate({
      target: smsCompliance.phoneNumberId,
      set: withUpdatedAt({ ...values, ...review, submittedAt: sql`now()` }),
      setWhere: and(tenant.owns(smsCompliance), ne(smsCompliance.status, 'approved')),
    })
    .returning({ phoneNumberId: smsCompliance.phoneNumberId });
  return rows.length === 1;
}

/**
 * Sets the review outcome of a submitted number. `approved_at` is when the record became approved:
 * approving an approved record keeps it; any other status clears it. False when there is no record.
 */
export async function updateStatus(
  ex: Executor,
  tenant: Tenant,
  phoneNumberId: number,
  change: { status: ComplianceStatus; rejectionReason: string | null; reviewedByUserId: number | null },
): Promise<boolean> {
  const rows = await ex
    .update(smsCompliance)
    .set(
      withUpdatedAt({
        status: change.status,
        rejectionReason: change.rejectionReason,
        reviewedByUserId: change.reviewedByUserId,
        approvedAt:
          change.status === 'approved'
            ? sql`case when ${smsCompliance.status} = 'approved' then ${smsCompliance.approvedAt} else now() end`
            : null,
      }),
    )
    .where(tenant.where(smsCompliance, eq(smsCompliance.phoneNumberId, phoneNumberId)))
    .returning({ phoneNumberId: smsCompliance.phoneNumberId });
  return rows.length === 1;
}

/**
 * The organization a phone number belongs to, looked up on the whole platform. Only for operator
 * commands (the CLI), which act without a tenant; everything else goes through a `Tenant`.
 */
export async function organizationOfPhoneNumber(
  ex: Executor,
  phoneNumberId: number,
): Promise<number | undefined> {
  const [row] = await ex
    .select({ organizationId: phoneNumbers.organizationId })
    .from(phoneNumbers)
    .where(eq(phoneNumbers.id, phoneNumberId));
  return row?.organizationId;
}
