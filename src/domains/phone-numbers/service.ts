/**
 * Phone numbers: numbers an organization brings from its carrier accounts, each routed to at most
 * one assistant or one graph. A number belongs to one organization on the whole platform.
 */
import type { Db, Executor } from '../../db/client.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../db/errors.js';
import type { Tenant } from '../../db/tenant.js';
import { isTollFree, NOT_E164_MESSAGE, toE164 } from '../../lib/phone.js';
import { findAssistant } from '../assistants/reads.js';
import { conflict, invalidField, notFound, type ValidationFailed } from '../errors.js';
import { findGraph } from '../graphs/reads.js';
import type { Principal } from '../identity/principal.js';
import * as store from './store.js';

/**
 * Messages per second a number may send when its own `sms_rate_per_second` is not set: the limits
 * US carriers apply to application traffic (10DLC long codes 1 message/s, toll-free numbers 3/s),
 * which all three carriers pass on. A SIP trunk sends no SMS; its value only keeps the field total.
 */
export const DEFAULT_SMS_RATE = { longCode: 1, tollFree: 3 } as const;

export function defaultSmsRate(phoneNumber: string): number {
  return isTollFree(phoneNumber) ? DEFAULT_SMS_RATE.tollFree : DEFAULT_SMS_RATE.longCode;
}

export interface PhoneNumberInput {
  phone_number?: string;
  provider?: string;
  friendly_name?: string | null;
  assistant_id?: number | null;
  graph_id?: number | null;
  sms_rate_per_second?: number | null;
}

export class PhoneNumberService {
  constructor(private readonly deps: { db: Db }) {}

  async create(principal: Principal, input: PhoneNumberInput & { phone_number: string; provider: string }) {
    const values = await this.#values(this.deps.db, principal.tenant, input);
    const id = await this.#write(values, () =>
      store.insertPhoneNumber(this.deps.db, principal.tenant, values as store.PhoneNumberValues),
    );
    if (id === undefined) throw alreadyRegistered(values.phoneNumber as string);
    return this.get(principal, id);
  }

  async get(principal: Principal, id: number): Promise<store.PhoneNumberRow> {
    const row = await store.findPhoneNumber(this.deps.db, principal.tenant, id);
    if (!row) throw notFound('Phone number not found');
    return row;
  }

  list(
    principal: Principal,
    options: { skip: number; limit: number; assistantId?: number; provider?: string },
  ) {
    return store.listPhoneNumbers(this.deps.db, principal.tenant, options);
  }

  /** Changes the named fields. Routing to an assistant ends routing to a graph, and the other way round. */
  async update(principal: Principal, id: number, input: PhoneNumberInput): Promise<store.PhoneNumberRow> {
    const changes = await this.#values(this.deps.db, principal.tenant, input);
    if (changes.assistantId != null && input.graph_id === undefined) changes.graphId = null;
    if (changes.graphId != null && input.assistant_id === undefined) changes.assistantId = null;
    const updated = await this.#write(changes, () =>
      store.updatePhoneNumber(this.deps.db, principal.tenant, id, changes),
    );
    if (!updated) throw notFound('Phone number not found');
    return this.get(principal, id);
  }

  async remove(principal: Principal, id: number): Promise<void> {
    if (!(await store.deletePhoneNumber(this.deps.db, principal.tenant, id)))
      throw notFound('Phone number not found');
  }

  /** The column values the input names, normalised and checked against the organization's resources. */
  async #values(
    ex: Executor,
    tenant: Tenant,
    input: PhoneNumberInput,
  ): Promise<Partial<store.PhoneNumberValues>> {
    const values: Partial<store.PhoneNumberValues> = {};
    if (input.phone_number !== undefined) {
      const e164 = toE164(input.phone_number);
      if (!e164) throw invalidField(['body', 'phone_number'], NOT_E164_MESSAGE);
      values.phoneNumber = e164;
    }
    if (input.provider !== undefined) values.provider = input.provider;
    if (input.friendly_name !== undefined) values.friendlyName = input.friendly_name?.trim() || null;
    if (input.sms_rate_per_second !== undefined) values.smsRatePerSecond = input.sms_rate_per_second;
    if (input.assistant_id != null && input.graph_id != null) {
      throw invalidField(['body', 'graph_id'], 'A number routes to one assistant or one graph, not both');
    }
    if (input.assistant_id !== undefined) {
      if (input.assistant_id !== null && !(await findAssistant(ex, tenant, input.assistant_id)))
        throw unknownAssistant();
      values.assistantId = input.assistant_id;
    }
    if (input.graph_id !== undefined) {
      if (input.graph_id !== null && !(await findGraph(ex, tenant, input.graph_id))) throw unknownGraph();
      values.graphId = input.graph_id;
    }
    return values;
  }

  /** Runs a write, turning the races the checks above cannot see into the same answers. */
  async #write<T>(values: Partial<store.PhoneNumberValues>, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (isUniqueViolation(error)) throw alreadyRegistered(String(values.phoneNumber));
      // The assistant or graph was deleted between the check and the write.
      if (isForeignKeyViolation(error))
        throw constraintOf(error) === 'phone_numbers_graph_fk' ? unknownGraph() : unknownAssistant();
      throw error;
    }
  }
}

function alreadyRegistered(phoneNumber: string) {
  return conflict(`Phone number ${phoneNumber} is already registered`);
}

function unknownGraph(): ValidationFailed {
  return invalidField(['body', 'graph_id'], 'No graph with this id in your organization');
}

/** The name of the constraint a database error reports (pg and PGlite both set `constraint`). */
function constraintOf(error: unknown): string | undefined {
  for (let current: unknown = error; current; current = (current as { cause?: unknown }).cause) {
    const name = (current as { constraint?: unknown }).constraint;
    if (typeof name === 'string') return name;
  }
  return undefined;
}

function unknownAssistant(): ValidationFailed {
  return invalidField(['body', 'assistant_id'], 'No assistant with this id in your organization');
}
