/**
 * Test factories: organizations with a verified admin, plain members, API keys with chosen areas.
 * They go through the real HTTP routes wherever a route exists, so they exercise what users do.
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { Permissions, Role } from '../../src/domains/identity/principal.js';
import { SESSION_COOKIE } from '../../src/domains/identity/principal.js';
import { insertMembership, markEmailVerified } from '../../src/domains/identity/store.js';
import type { TestPlatform } from './harness.js';

export interface TestUser {
  id: number;
  email: string;
  password: string;
  organizationId: number;
  role: Role;
  accessToken: string;
  refreshToken: string;
  sessionCookie: string;
  csrfToken: string;
  /** `Authorization: Bearer <access token>` */
  headers: { authorization: string };
}

export interface TestApiKey {
  id: number;
  key: string;
  headers: { authorization: string };
}

/** A carrier_a account (what the simulator is told to accept and the organization stores). */
export interface CarrierAAccount {
  account_sid: string;
  auth_token: string;
}

/** An organization set up to place calls: carrier_a credentials, an assistant and a number routed to it. */
export interface CarrierOrganization {
  admin: TestUser;
  account: CarrierAAccount;
  assistantId: number;
  /** E.164; empty with `number: false`. */
  number: string;
  /** 0 with `number: false`. */
  numberId: number;
}

let counter = 0;
let carrierSerial = 0;
export function uniqueEmail(label = 'user'): string {
  counter += 1;
  return `${label}.${counter}.${randomBytes(3).toString('hex')}@example.test`;
}

export function sessionCookieOf(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === SESSION_COOKIE);
  if (!cookie) throw new Error('No session cookie in response');
  return cookie.value;
}

/** Throws with the body when a set-up request did not answer `status` (set-up, not the assertion under test). */
export function expectStatus(response: LightMyRequestResponse, status: number): void {
  if (response.statusCode !== status) {
    throw new Error(`Expected ${status}, got ${response.statusCode}: ${response.body}`);
  }
}

function toUser(response: LightMyRequestResponse, password: string): TestUser {
  const body = response.json();
  return {
    id: body.user.id,
    email: body.user.email,
    password,
    organizationId: body.organization.id,
    role: body.role,
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    sessionCookie: sessionCookieOf(response),
    csrfToken: body.csrf_token,
    headers: { authorization: `Bearer ${body.access_token}` },
  };
}

export class Factories {
  constructor(readonly t: TestPlatform) {}

  /** Registers a user, who is admin of a new organization; verified unless `verified: false`. */
  async user(
    options: { verified?: boolean; organizationName?: string; email?: string } = {},
  ): Promise<TestUser> {
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const email = options.email ?? uniqueEmail();
    const response = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: {
        email,
        password,
        first_name: 'Test',
        last_name: 'User',
        ...(options.organizationName ? { organization_name: options.organizationName } : {}),
      },
    });
    expectStatus(response, 201);
    const user = toUser(response, password);
    // Before any authenticated request, so no cached principal holds the unverified state.
    if (options.verified !== false) await markEmailVerified(this.t.database.db, user.id);
    return user;
  }

  /** A verified user who belongs to `organizationId` with `role`, signed in there. */
  async member(
    organizationId: number,
    role: Role = 'user',
    options: { verified?: boolean } = {},
  ): Promise<TestUser> {
    const own = await this.user(options);
    await insertMembership(this.t.database.db, own.id, organizationId, role);
    return this.login(own, organizationId);
  }

  async login(user: { email: string; password: string }, organizationId?: number): Promise<TestUser> {
    const response = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: {
        email: user.email,
        password: user.password,
        ...(organizationId ? { organization_id: organizationId } : {}),
      },
    });
    expectStatus(response, 200);
    return toUser(response, user.password);
  }

  /** An assistant of `user`'s organization (through the route), by name; answers its id. */
  async assistant(user: TestUser, name: string): Promise<number> {
    const response = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: user.headers,
      payload: { name },
    });
    expectStatus(response, 201);
    return response.json().id;
  }

  /**
   * A new organization (its admin) that can place calls through carrier_a: an account the simulator
   * accepts (when `sim` is given) stored as the organization's credentials (unless
   * `credentials: false`), an assistant, and a number routed to it (unless `number: false`).
   */
  async carrierOrganization(
    options: {
      sim?: { addAccount(account: CarrierAAccount): void };
      credentials?: boolean;
      number?: boolean;
      assistantName?: string;
      smsRatePerSecond?: number;
    } = {},
  ): Promise<CarrierOrganization> {
    const admin = await this.user();
    // Taken once: organizations made at the same time each keep their own serial across the awaits.
    const serial = ++carrierSerial;
    const account = {
      account_sid: `AC${String(serial).padStart(32, '0')}`,
      auth_token: `carrier-token-${serial}-${randomBytes(4).toString('hex')}`,
    };
    options.sim?.addAccount(account);
    if (options.credentials !== false) {
      const put = await this.t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: admin.headers,
        payload: { carrier_a: account },
      });
      expectStatus(put, 200);
    }
    const assistantId = await this.assistant(admin, options.assistantName ?? 'Caller');
    if (options.number === false) return { admin, account, assistantId, number: '', numberId: 0 };
    const number = `+1415999${String(serial).padStart(4, '0')}`;
    const registered = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: admin.headers,
      payload: {
        phone_number: number,
        provider: 'carrier_a',
        assistant_id: assistantId,
        ...(options.smsRatePerSecond !== undefined ? { sms_rate_per_second: options.smsRatePerSecond } : {}),
      },
    });
    expectStatus(registered, 201);
    return { admin, account, assistantId, number, numberId: registered.json().id };
  }

  async apiKey(
    user: TestUser,
    options: { permissions?: Permissions; rateLimit?: number; name?: string } = {},
  ): Promise<TestApiKey> {
    const response = await this.t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      headers: user.headers,
      payload: {
        name: options.name ?? `key-${randomBytes(3).toString('hex')}`,
        permissions: options.permissions ?? {},
        ...(options.rateLimit !== undefined ? { rate_limit: options.rateLimit } : {}),
      },
    });
    expectStatus(response, 201);
    const body = response.json();
    return { id: body.api_key.id, key: body.key, headers: { authorization: `Bearer ${body.key}` } };
  }
}
