/**
 * For the SMS drain's tests: organizations with carrier_a credentials the simulator knows and
 * numbers at a chosen rate, sends through the API, and the check of a number's pace at the carrier.
 */
import { expect } from 'vitest';
import type { CarrierASimulator } from '../../src/sim/carrier-a.js';
import { Factories, type TestUser } from './factories.js';
import { type TestPlatform, waitFor } from './harness.js';

export interface SmsOrg {
  admin: TestUser;
  organizationId: number;
  assistantId: number;
}

export interface SmsNumber {
  number: string;
  numberId: number;
}

let serial = 0;

/** A number no other test of the run uses (the simulator tells messages apart by their numbers). */
export function uniqueNumber(prefix: string): string {
  serial += 1;
  return `${prefix}${String(1000 + serial).padStart(4, '0')}`;
}

/** An organization with carrier_a credentials (known to `sim`) and an assistant. */
export async function smsOrganization(t: TestPlatform, sim: CarrierASimulator): Promise<SmsOrg> {
  const admin = await new Factories(t).user();
  serial += 1;
  const account = { account_sid: `AC${String(serial).padStart(32, '3')}`, auth_token: `drain-${serial}` };
  sim.addAccount(account);
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { carrier_a: account },
  });
  expect(put.statusCode, put.body).toBe(200);
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name: 'Drained' },
  });
  expect(assistant.statusCode, assistant.body).toBe(201);
  return { admin, organizationId: put.json().id, assistantId: assistant.json().id };
}

/** A number of `org` routed to its assistant, sending at `rate` messages a second (null: its default). */
export async function smsNumber(t: TestPlatform, org: SmsOrg, rate: number | null): Promise<SmsNumber> {
  const number = uniqueNumber('+1415444');
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: org.admin.headers,
    payload: {
      phone_number: number,
      provider: 'carrier_a',
      assistant_id: org.assistantId,
      sms_rate_per_second: rate,
    },
  });
  expect(response.statusCode, response.body).toBe(201);
  return { number, numberId: response.json().id };
}

/** Queues a message through `POST /sms/send`; returns its id. */
export async function queue(t: TestPlatform, org: SmsOrg, from: SmsNumber, message: string): Promise<string> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/sms/send',
    headers: org.admin.headers,
    payload: { from_phone_number: from.number, to_phone_number: uniqueNumber('+1415555'), message },
  });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.json().status).toBe('queued');
  return response.json().message_id as string;
}

export async function messageOf(t: TestPlatform, org: SmsOrg, id: string): Promise<Record<string, unknown>> {
  const response = await t.app.inject({ method: 'GET', url: `/sms/${id}`, headers: org.admin.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** Waits until the message has `status` (as GET /sms/{id} shows it) and returns it. */
export function waitStatus(t: TestPlatform, org: SmsOrg, id: string, status: string, timeoutMs = 15_000) {
  return waitFor(async () => {
    const message = await messageOf(t, org, id);
    return message.status === status ? message : undefined;
  }, timeoutMs);
}

/** The bodies the carrier got from `from`, in the order they arrived. */
export function arrivedFrom(sim: CarrierASimulator, from: SmsNumber) {
  return sim.messages.filter((m) => m.from === from.number).sort((a, b) => a.at - b.at);
}

/**
 * Checks a number's pace at the carrier, from the arrival times: the whole run took at least
 * (n − 2) / rate — one interval of slack, for the way there of the first message, which shares
 * this process with the test (sms.test.ts saw one 195 ms late) — and any six consecutive arrivals
 * (five intervals) span at least 70 % of 5 / rate: a late message may close up on the next one,
 * but no burst goes faster than the rate allows.
 */
export function expectPaced(arrivals: number[], rate: number): void {
  const at = [...arrivals].sort((a, b) => a - b);
  const interval = 1000 / rate;
  expect(at.at(-1)! - at[0]!, 'first to last').toBeGreaterThanOrEqual((at.length - 2) * interval);
  for (let i = 5; i < at.length; i++)
    expect(at[i]! - at[i - 5]!, `arrivals ${i - 5}…${i}`).toBeGreaterThanOrEqual(0.7 * 5 * interval);
}
