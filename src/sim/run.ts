/**
 * Runs the three carrier simulators for local development (`npm run sim`), each with one demo
 * account, and prints what to configure: the base URLs for the platform's environment and the
 * credentials to store in your organization. Calls placed through them complete after 30 s of
 * (simulated) talk and messages are delivered; their signed webhooks go to the URLs the platform
 * gives, so start the platform with PUBLIC_URL reachable from here (the default is).
 */
import { generateKeyPairSync } from 'node:crypto';
import { CarrierASimulator } from './carrier-a.js';
import { CarrierBSimulator } from './carrier-b.js';
import { CarrierCSimulator } from './carrier-c.js';

// `npm run sim -- 5010` starts them on 5010, 5011 and 5012 instead.
const firstPort = Number(process.argv[2] ?? 4010);
if (!Number.isInteger(firstPort) || firstPort < 1 || firstPort > 65533) {
  console.error('Usage: npm run sim [-- FIRST_PORT]   (three ports from FIRST_PORT, default 4010)');
  process.exit(2);
}

const carrierA = new CarrierASimulator();
const carrierB = new CarrierBSimulator();
const carrierC = new CarrierCSimulator();
const accountA = { account_sid: 'AC00000000000000000000000000000001', auth_token: 'local-carrier-a-token' };
const accountB = { api_key: 'KEYlocalcarrierb', connection_id: 'local-connection' };
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const accountC = {
  application_id: '00000000-0000-4000-8000-000000000001',
  private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};

carrierA.addAccount(accountA);
carrierB.addAccount(accountB);
carrierC.addAccount({
  application_id: accountC.application_id,
  public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
});

const [a, b, c] = await Promise.all([
  carrierA.start(firstPort),
  carrierB.start(firstPort + 1),
  carrierC.start(firstPort + 2),
]);

const organization = {
  carrier_a: accountA,
  carrier_b: { ...accountB, public_key: carrierB.publicKey },
  carrier_c: { ...accountC, signature_secret: carrierC.signatureSecret },
};
console.log(`Carrier simulators are running. Start the platform with:

  CARRIER_A_BASE_URL=${a} CARRIER_B_BASE_URL=${b} CARRIER_C_BASE_URL=${c} npm start

then store these credentials in your organization (admin):

  curl -s -X PUT http://127.0.0.1:8000/api/v1/organization -H "authorization: Bearer $TOKEN" \\
    -H 'content-type: application/json' -d '${JSON.stringify(organization).replace(/'/g, "'\\''")}'

The private key changes at every start of the simulators: store the credentials again after one.
Stop with Ctrl-C.`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all([carrierA.stop(), carrierB.stop(), carrierC.stop()]).then(() => process.exit(0));
  });
}
