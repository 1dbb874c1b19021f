/**
 * The SIP agent keeping organizations' trunks in view (issue 21): OPTIONS pings recorded as each
 * trunk's health, registrations kept with the trunks that ask for one, replaced when the settings
 * change and removed when they stop asking — seen through `GET /api/v1/organization/configuration-status`
 * and the agent's `health`. The trunks are sipp (test/sipp/uas_register.xml: a 401 challenge, the
 * credentials checked, 200; OPTIONS answered) and, where the test must see every REGISTER, a small
 * registrar on a loopback UDP socket. The upkeep runs a round a second here.
 */
import { createSocket, type Socket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { waitFor } from './support/harness.js';
import { type SipRig, startSipRig } from './support/sip-rig.js';
import { freePort, startSipp } from './support/sipp.js';

let rig: SipRig;

beforeAll(async () => {
  rig = await startSipRig({ SIP_TRUNK_CHECK_INTERVAL_SECONDS: '1' });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

interface TrunkStatus {
  agent: string;
  reachable: boolean | null;
  last_status: number | null;
  rtt_ms: number | null;
  checked_at: string | null;
  registration: string;
  registration_status: number | null;
}

async function status(user: TestUser): Promise<{ sip_trunk?: TrunkStatus }> {
  const response = await rig.t.app.inject({
    method: 'GET',
    url: '/api/v1/organization/configuration-status',
    headers: user.headers,
  });
  expectStatus(response, 200);
  return response.json();
}

/** Waits until the organization's trunk status satisfies `ok`, and returns it. */
async function trunkStatus(user: TestUser, ok: (trunk: TrunkStatus) => boolean, timeoutMs = 10_000) {
  let last: TrunkStatus | undefined;
  try {
    return await waitFor(async () => {
      last = (await status(user)).sip_trunk;
      return last && ok(last) ? last : undefined;
    }, timeoutMs);
  } catch (error) {
    throw new Error(`${(error as Error).message}; the trunk's status was ${JSON.stringify(last)}`);
  }
}

async function organizationId(user: TestUser): Promise<number> {
  const response = await rig.t.app.inject({
    method: 'GET',
    url: '/api/v1/organization',
    headers: user.headers,
  });
  expectStatus(response, 200);
  return (response.json() as { id: number }).id;
}

async function putTrunk(user: TestUser, config: Record<string, unknown> | null) {
  const response = await rig.t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: user.headers,
    payload: { sip_trunk_config: config },
  });
  expectStatus(response, 200);
}

describe('registration', () => {
  it('registers through the trunk’s digest challenge and sees it reachable, with a round trip', async () => {
    // Two sipp "calls": the first OPTIONS and the REGISTER (challenged, then accepted).
    const trunk = await startSipp({ scenario: 'uas_register.xml', calls: 2, timeoutSeconds: 20 });
    const org = await rig.organization({
      port: trunk.port,
      username: 'alice',
      password: 's3cret',
      register: true,
    });
    const seen = await trunkStatus(org.admin, (t) => t.registration === 'registered' && t.reachable === true);
    expect(seen).toMatchObject({ agent: 'running', reachable: true, last_status: 200 });
    // A round trip was measured (how long it took is the machine's, not the test's, business).
    expect(seen.rtt_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(seen.checked_at ?? '')).toBeGreaterThan(Date.now() - 10_000);
    // sipp checked the credentials (verifyauth): a wrong password would have been answered 403.
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const health = rig.agent.health(await organizationId(org.admin));
    expect(health).toMatchObject({ registration: 'registered', reachable: true, status: 200 });
  }, 30_000);

  it('reports a refused registration as failed, with the registrar’s status', async () => {
    const trunk = await startSipp({ scenario: 'uas_register.xml', calls: 2, timeoutSeconds: 20 });
    const org = await rig.organization({
      port: trunk.port,
      username: 'alice',
      password: 'wrong',
      register: true,
    });
    const seen = await trunkStatus(org.admin, (t) => t.registration === 'failed' && t.reachable === true);
    expect(seen.registration_status).toBe(403);
    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
  }, 30_000);

  it('removes the binding when register goes false, and registers afresh when the settings change', async () => {
    const registrar = await startRegistrar();
    try {
      const org = await rig.organization({
        port: registrar.port,
        username: 'bob',
        password: 'first',
        register: true,
      });
      await trunkStatus(org.admin, (t) => t.registration === 'registered');
      const first = registrar.registers[0];
      expect(first).toMatchObject({ expires: '3600', aor: `sip:bob@127.0.0.1` });
      // A new password: the old binding removed, a new registration (a new Call-ID) made.
      await putTrunk(org.admin, {
        sip_domain: '127.0.0.1',
        port: registrar.port,
        register: true,
        password: 'second',
      });
      await waitFor(() =>
        registrar.registers.some((r) => r.callId !== first?.callId && r.expires === '3600'),
      );
      await waitFor(() => registrar.registers.some((r) => r.callId === first?.callId && r.expires === '0'));
      await trunkStatus(org.admin, (t) => t.registration === 'registered');
      const second = registrar.registers.find((r) => r.callId !== first?.callId);
      // register: false — the binding is removed (Expires: 0) and the status says off.
      await putTrunk(org.admin, { sip_domain: '127.0.0.1', port: registrar.port, register: false });
      await waitFor(() => registrar.registers.some((r) => r.callId === second?.callId && r.expires === '0'));
      const off = await trunkStatus(org.admin, (t) => t.registration === 'off');
      expect(off.reachable).toBe(true);
      // The trunk removed altogether: nothing more is said about it, and no more pings go there.
      await putTrunk(org.admin, null);
      expect((await status(org.admin)).sip_trunk).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const pings = registrar.options;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(registrar.options).toBe(pings);
    } finally {
      registrar.close();
    }
  }, 30_000);
});

describe('health', () => {
  it('reports a trunk on a closed port as unreachable', async () => {
    const closed = await freePort();
    const org = await rig.organization({ port: closed, transport: 'tcp' });
    const seen = await trunkStatus(org.admin, (t) => t.reachable !== null);
    expect(seen).toMatchObject({ agent: 'running', reachable: false, last_status: 503, rtt_ms: null });
    expect(seen.registration).toBe('off');
  }, 30_000);
});

describe('configuration-status', () => {
  it('shows each organization its own trunk only, and refuses a request without credentials', async () => {
    const registrar = await startRegistrar();
    try {
      const owner = await rig.organization({ port: registrar.port });
      const other = await rig.organization({ port: await freePort(), transport: 'tcp' });
      const mine = await trunkStatus(owner.admin, (t) => t.reachable === true);
      expect(mine).toMatchObject({ last_status: 200, registration: 'off' });
      const theirs = await trunkStatus(other.admin, (t) => t.reachable !== null);
      expect(theirs).toMatchObject({ reachable: false, last_status: 503 });
      // An organization without a trunk hears nothing of the others'.
      const none = await new Factories(rig.t).user();
      expect((await status(none)).sip_trunk).toBeUndefined();
      const anonymous = await rig.t.app.inject({
        method: 'GET',
        url: '/api/v1/organization/configuration-status',
      });
      expect(anonymous.statusCode).toBe(401);
    } finally {
      registrar.close();
    }
  }, 30_000);
});

interface SeenRegister {
  callId: string;
  aor: string;
  expires: string;
}

/**
 * A registrar on a loopback UDP socket that accepts every REGISTER (200, the Contact granted for what
 * it asked) and answers OPTIONS; it keeps what it was sent.
 */
async function startRegistrar(): Promise<{
  port: number;
  registers: SeenRegister[];
  readonly options: number;
  close(): void;
}> {
  const socket: Socket = createSocket('udp4');
  const registers: SeenRegister[] = [];
  let options = 0;
  socket.on('message', (data, from) => {
    const text = data.toString('latin1');
    const [head = ''] = text.split('\r\n\r\n');
    const lines = head.split('\r\n');
    const method = lines[0]?.split(' ')[0];
    if (method !== 'REGISTER' && method !== 'OPTIONS') return;
    const field = (name: string) =>
      lines.filter((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`));
    const value = (name: string) =>
      field(name)[0]
        ?.slice(name.length + 1)
        .trim() ?? '';
    const reply = [
      'SIP/2.0 200 OK',
      ...field('Via'),
      field('From')[0] ?? '',
      `${field('To')[0] ?? ''};tag=registrar`,
      field('Call-ID')[0] ?? '',
      field('CSeq')[0] ?? '',
    ];
    if (method === 'REGISTER') {
      const expires = value('Expires');
      const retransmitted = registers.some(
        (r) => r.callId === value('Call-ID') && r.expires === expires && expires === '0',
      );
      if (!retransmitted)
        registers.push({ callId: value('Call-ID'), aor: value('To').replace(/^<|>$/g, ''), expires });
      if (expires !== '0') reply.push(`Contact: ${value('Contact')};expires=${expires}`);
    } else {
      options += 1;
    }
    reply.push('Content-Length: 0', '', '');
    socket.send(Buffer.from(reply.join('\r\n'), 'latin1'), from.port, from.address);
  });
  const port = await new Promise<number>((resolve) =>
    socket.bind(0, '127.0.0.1', () => resolve(socket.address().port)),
  );
  return {
    port,
    registers,
    get options() {
      return options;
    },
    close: () => socket.close(),
  };
}
