/**
 * An organization set up to take and place calls through carrier_c, for the carrier_c media tests:
 * an application the simulator accepts (one RSA key pair serves every application; the signature
 * secret is the simulator's, so its signed webhooks verify), stored as the organization's carrier_c
 * credentials, an assistant, and a carrier_c number routed to it. (factories.ts's
 * carrierOrganization is carrier_a's.)
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { CarrierCSimulator } from '../../src/sim/carrier-c.js';
import { expectStatus, type Factories, type TestUser } from './factories.js';
import type { TestPlatform } from './harness.js';

const rsa = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

export interface CarrierCOrganization {
  admin: TestUser;
  applicationId: string;
  assistantId: number;
  /** E.164. */
  number: string;
}

let serial = 0;

export async function carrierCOrganization(
  t: TestPlatform,
  f: Factories,
  sim: CarrierCSimulator,
): Promise<CarrierCOrganization> {
  const mine = ++serial;
  const admin = await f.user();
  const applicationId = randomUUID();
  sim.addAccount({ application_id: applicationId, public_key_pem: rsa.publicKey });
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: {
      carrier_c: {
        application_id: applicationId,
        private_key: rsa.privateKey,
        signature_secret: sim.signatureSecret,
      },
    },
  });
  expectStatus(put, 200);
  const assistantId = await f.assistant(admin, 'Caller');
  const number = `+1415333${String(1000 + mine).padStart(4, '0')}`;
  const registered = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: number, provider: 'carrier_c', assistant_id: assistantId },
  });
  expectStatus(registered, 201);
  return { admin, applicationId, assistantId, number };
}
