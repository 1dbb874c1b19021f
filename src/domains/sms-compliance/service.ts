/**
 * SMS compliance: an organization submits each phone number for outbound messaging review (use case,
 * business, sample messages); an admin — or an operator with the CLI — approves or rejects it. Only
 * an approved number may send outbound SMS where compliance is enforced (`canSendOutbound`).
 */
import type { Db, Executor } from '../../db/client.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { ComplianceStatus } from '../../db/schema/index.js';
import { Tenant } from '../../db/tenant.js';
import { conflict, invalidField, notFound } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import * as store from './store.js';

export const USE_CASES = [
  'customer_support',
  'appointment_reminders',
  'order_notifications',
  'two_factor_auth',
  'marketing',
  'other',
] as const;
export type UseCase = (typeof USE_CASES)[number];

/** A record's status, or `not_submitted` for a number without one. */
export type ComplianceState = ComplianceStatus | 'not_submitted';

/** The limits of a sample message (platform-api Limits). */
export const SAMPLE_MESSAGE_LENGTH = { min: 10, max: 320 } as const;

export interface CanSend {
  can_send: boolean;
  reason: string;
  status: ComplianceState;
}

export interface SubmissionInput {
  phone_number_id: number;
  use_case: UseCase;
  business_name: string;
  business_description: string;
  sample_messages: string[];
  website_url?: string | null;
  contact_email?: string | null;
}

export interface StatusChange {
  status: ComplianceStatus;
  /** Required (non-blank) with `rejected`; refused with any other status. */
  rejectionReason?: string | null;
}

export interface ComplianceSummary {
  totalNumbers: number;
  approved: number;
  pending: number;
  rejected: number;
  notSubmitted: number;
  numbers: store.NumberCompliance[];
}

export function stateOf(record: store.ComplianceRow | null): ComplianceState {
  return record?.status ?? 'not_submitted';
}

/** Whether a number with this record may send outbound SMS, and why (or why not). */
export function canSendOf(record: store.ComplianceRow | null): CanSend {
  const status = stateOf(record);
  switch (status) {
    case 'approved':
      return { can_send: true, reason: 'SMS compliance approved', status };
    case 'pending':
      return { can_send: false, reason: 'SMS compliance review is pending', status };
    case 'rejected':
      return {
        can_send: false,
        reason: `SMS compliance was rejected: ${record?.rejectionReason ?? 'no reason given'}`,
        status,
      };
    default:
      return { can_send: false, reason: 'No SMS compliance submission for this phone number', status };
  }
}

/**
 * Whether the organization's number may send outbound SMS: only an approved one may. For other
 * services (SMS sending, campaigns); throws `notFound` when the number is not the tenant's.
 */
export async function canSendOutbound(ex: Executor, tenant: Tenant, phoneNumberId: number): Promise<CanSend> {
  const found = await store.findNumberCompliance(ex, tenant, phoneNumberId);
  if (!found) throw phoneNumberNotFound();
  return canSendOf(found.record);
}

export class SmsComplianceService {
  constructor(private readonly deps: { db: Db }) {}

  /** The number and its record (null when never submitted); 404 for a number of another organization. */
  async status(principal: Principal, phoneNumberId: number): Promise<store.NumberCompliance> {
    return this.#find(principal.tenant, phoneNumberId);
  }

  /**
   * Submits the number for review, or replaces its pending or rejected submission (back to
   * `pending`). An approved number answers 409: an admin sets it back to pending first.
   */
  async submit(principal: Principal, input: SubmissionInput): Promise<store.NumberCompliance> {
    const { tenant } = principal;
    const values = submissionValues(input, principal.user.id);
    await this.#find(tenant, input.phone_number_id);
    let written: boolean;
    try {
      written = await store.upsertSubmission(this.deps.db, tenant, input.phone_number_id, values);
    } catch (error) {
      // The number was deleted between the check and the write.
      if (isForeignKeyViolation(error)) throw phoneNumberNotFound();
      throw error;
    }
    if (!written) {
      throw conflict(
        'SMS compliance of this phone number is already approved; an admin must set it back to pending before it can be resubmitted',
      );
    }
    return this.#find(tenant, input.phone_number_id);
  }

  canSend(principal: Principal, phoneNumberId: number): Promise<CanSend> {
    return canSendOutbound(this.deps.db, principal.tenant, phoneNumberId);
  }

  /** Every number of the organization; those never submitted count as `not_submitted`. */
  async summary(principal: Principal): Promise<ComplianceSummary> {
    const numbers = await store.listNumberCompliance(this.deps.db, principal.tenant);
    const count = (state: ComplianceState) => numbers.filter((n) => stateOf(n.record) === state).length;
    return {
      totalNumbers: numbers.length,
      approved: count('approved'),
      pending: count('pending'),
      rejected: count('rejected'),
      notSubmitted: count('not_submitted'),
      numbers,
    };
  }

  /** The admin review: sets the status of a submitted number of the admin's organization. */
  setStatus(principal: Principal, phoneNumberId: number, change: StatusChange) {
    return this.#setStatus(principal.tenant, phoneNumberId, change, principal.user.id);
  }

  /** The same review by an operator (CLI): the number is found on the whole platform. */
  async setStatusAsOperator(phoneNumberId: number, change: StatusChange) {
    const organizationId = await store.organizationOfPhoneNumber(this.deps.db, phoneNumberId);
    if (organizationId === undefined) throw phoneNumberNotFound();
    const found = await this.#setStatus(new Tenant(organizationId), phoneNumberId, change, null);
    return { organizationId, ...found };
  }

  async #setStatus(
    tenant: Tenant,
    phoneNumberId: number,
    change: StatusChange,
    reviewedByUserId: number | null,
  ): Promise<store.NumberCompliance> {
    const reason = change.rejectionReason?.trim() || null;
    if (change.status === 'rejected' && !reason) {
      throw invalidField(
        ['query', 'rejection_reason'],
        'A rejection_reason is required when new_status is rejected',
        'missing',
      );
    }
    if (change.status !== 'rejected' && reason) {
      throw invalidField(
        ['query', 'rejection_reason'],
        'rejection_reason is only used with new_status rejected',
      );
    }
    await this.#find(tenant, phoneNumberId);
    const updated = await store.updateStatus(this.deps.db, tenant, phoneNumberId, {
      status: change.status,
      rejectionReason: reason,
      reviewedByUserId,
    });
    if (!updated) {
      throw notFound(
        `Phone number ${phoneNumberId} has no SMS compliance submission; submit one before setting its status`,
      );
    }
    return this.#find(tenant, phoneNumberId);
  }

  async #find(tenant: Tenant, phoneNumberId: number): Promise<store.NumberCompliance> {
    const found = await store.findNumberCompliance(this.deps.db, tenant, phoneNumberId);
    if (!found) throw phoneNumberNotFound();
    return found;
  }
}

/** The submission's column values: text trimmed, blanks refused, empty optional fields stored as null. */
function submissionValues(input: SubmissionInput, userId: number): store.SubmissionValues {
  const required = (field: 'business_name' | 'business_description') => {
    const value = input[field].trim();
    if (!value) throw invalidField(['body', field], 'Must not be blank', 'string_too_short');
    return value;
  };
  const sampleMessages = input.sample_messages.map((message, index) => {
    const text = message.trim();
    if (text.length < SAMPLE_MESSAGE_LENGTH.min) {
      throw invalidField(
        ['body', 'sample_messages', index],
        `Each sample message needs at least ${SAMPLE_MESSAGE_LENGTH.min} characters besides surrounding spaces`,
        'string_too_short',
      );
    }
    return text;
  });
  return {
    useCase: input.use_case,
    businessName: required('business_name'),
    businessDescription: required('business_description'),
    sampleMessages,
    websiteUrl: input.website_url?.trim() || null,
    contactEmail: input.contact_email?.trim() || null,
    submittedByUserId: userId,
  };
}

function phoneNumberNotFound() {
  return notFound('Phone number not found');
}
