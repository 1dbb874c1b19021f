/**
 * The trunk upkeep's timing rules on a fake clock (the SIP side is test/sip-trunk-upkeep.test.ts, on
 * real sockets): a round every interval; a ping unanswered past its time-out recorded as 408 while no
 * second ping goes out; one silent trunk holding up no other; a refused delivery recorded at once; a
 * trunk's registration replaced on a settings change; `stop()` waiting a bounded time for unregisters.
 * The user agent here answers as a script says, so that every moment can be checked.
 */
import { describe, expect, it } from 'vitest';
import { sipTrunkStatus } from '../src/domains/organizations/trunk-status.js';
import { SipTrunkAdapter } from '../src/providers/carriers/sip-trunk.js';
import type { PacerTimers } from '../src/sip/rtp-pacer.js';
import type { Peer } from '../src/sip/transaction-common.js';
import type { RegisterOptions, Registration } from '../src/sip/user-agent.js';
import type { TrunkSettings } from '../src/voice/sip/trunk-settings.js';
import { reachableStatus, TrunkUpkeep } from '../src/voice/sip/trunk-upkeep.js';

class FakeClock implements PacerTimers {
  #now = 0;
  #timers = new Map<number, { at: number; callback: () => void }>();
  #next = 1;
  now = () => this.#now;
  setTimeout = (callback: () => void, ms: number) => {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  };
  clearTimeout = (handle: unknown) => {
    this.#timers.delete(handle as number);
  };
  /** Moves time on, running what falls due (and letting promises settle between timers). */
  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      await settle();
      const due = [...this.#timers.entries()]
        .filter(([, timer]) => timer.at <= end)
        .sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

interface Ping {
  destination: Peer;
  answer(status: number): void;
}

function trunk(port: number, extra: Partial<TrunkSettings> = {}): TrunkSettings {
  return {
    domain: '192.0.2.1',
    port,
    transport: 'udp',
    inboundEnabled: false,
    inboundAddresses: [],
    register: false,
    ...extra,
  };
}

function rig(trunks: Map<number, TrunkSettings>) {
  const clock = new FakeClock();
  const pings: Ping[] = [];
  const registrations: Array<{ options: RegisterOptions; stopped: boolean; registration: Registration }> = [];
  const upkeep = new TrunkUpkeep({
    ua: {
      ping: (destination) =>
        new Promise((resolve) => {
          const sentAt = clock.now();
          pings.push({ destination, answer: (status) => resolve({ status, rttMs: clock.now() - sentAt }) });
        }),
      register(options) {
        const entry = { options, stopped: false, registration: {} as Registration };
        entry.registration = {
          stop: () => {
            entry.stopped = true;
            return new Promise<void>(() => {}); // the trunk never answers the unregister
          },
        } as unknown as Registration;
        registrations.push(entry);
        return entry.registration;
      },
    },
    organizations: async () => [...trunks.keys()],
    trunkOf: async (id) => trunks.get(id),
    destination: async (settings) => ({ host: settings.domain, port: settings.port }),
    timers: clock,
    clock: () => new Date(Date.UTC(2026, 10, 27) + clock.now()),
    intervalMs: 1000,
    pingTimeoutMs: 5000,
    unregisterWaitMs: 2000,
    log: { warn: () => {} },
  });
  return { clock, pings, registrations, upkeep };
}

describe('reachableStatus', () => {
  it('counts every answer below 500 as alive, except 408', () => {
    expect([200, 401, 403, 404, 407, 486].every(reachableStatus)).toBe(true);
    expect([408, 500, 503, 603].some(reachableStatus)).toBe(false);
  });
});

describe('TrunkUpkeep', () => {
  it('pings each trunk every interval and records the answer with its round trip', async () => {
    const { clock, pings, upkeep } = rig(new Map([[1, trunk(5060)]]));
    upkeep.start();
    await clock.advance(0);
    expect(pings).toHaveLength(1);
    expect(upkeep.health(1)).toMatchObject({ reachable: null, status: null, registration: 'off' });
    await clock.advance(40);
    pings[0]?.answer(200);
    await settle();
    expect(upkeep.health(1)).toMatchObject({ reachable: true, status: 200, rttMs: 40 });
    expect(upkeep.health(1)?.checkedAt?.toISOString()).toBe('2026-11-27T00:00:00.040Z');
    await clock.advance(1000);
    expect(pings).toHaveLength(2);
    expect(upkeep.health(2)).toBeUndefined();
  });

  it('records a silent trunk as 408 after the ping time-out, sends no second ping meanwhile, and holds up no other', async () => {
    const trunks = new Map([
      [1, trunk(5060)],
      [2, trunk(5070)],
    ]);
    const { clock, pings, upkeep } = rig(trunks);
    upkeep.start();
    await clock.advance(0);
    const toSecond = () => pings.filter((ping) => ping.destination.port === 5070);
    for (let round = 0; round < 3; round++) {
      toSecond().at(-1)?.answer(200);
      await clock.advance(1000);
    }
    // The silent trunk still has its one ping out; the other is pinged every round.
    expect(pings.filter((ping) => ping.destination.port === 5060)).toHaveLength(1);
    expect(toSecond().length).toBeGreaterThanOrEqual(3);
    expect(upkeep.health(1)?.reachable).toBeNull();
    await clock.advance(2000);
    expect(upkeep.health(1)).toMatchObject({ reachable: false, status: 408, rttMs: null });
    expect(upkeep.health(2)?.reachable).toBe(true);
  });

  it('records a refused delivery at once (503), for the trunk it was meant for only', async () => {
    const { clock, upkeep } = rig(
      new Map([
        [1, trunk(5060, { transport: 'tcp' })],
        [2, trunk(5070, { transport: 'tcp' })],
      ]),
    );
    upkeep.start();
    await clock.advance(10);
    upkeep.transportError({ host: '::ffff:192.0.2.1', port: 5060 }, 'tcp');
    expect(upkeep.health(1)).toMatchObject({ reachable: false, status: 503 });
    expect(upkeep.health(2)?.reachable).toBeNull();
  });

  it('registers when asked, replaces the registration on new credentials, and stops it when register goes false', async () => {
    const credentials = { username: 'alice', password: 'one' };
    const trunks = new Map([[1, trunk(5060, { register: true, credentials })]]);
    const { clock, registrations, upkeep } = rig(trunks);
    upkeep.start();
    await clock.advance(0);
    expect(registrations).toHaveLength(1);
    expect(registrations[0]?.options).toMatchObject({
      registrar: 'sip:192.0.2.1',
      aor: 'sip:alice@192.0.2.1',
      expiresSeconds: 3600,
      credentials,
    });
    expect(upkeep.health(1)?.registration).toBe('registering');
    registrations[0]?.registration.onRegistered?.(3600);
    expect(upkeep.health(1)?.registration).toBe('registered');
    await clock.advance(1000);
    expect(registrations).toHaveLength(1); // nothing changed: the same registration is kept
    trunks.set(1, trunk(5060, { register: true, credentials: { username: 'alice', password: 'two' } }));
    await clock.advance(1000);
    expect(registrations).toHaveLength(2);
    expect(registrations[0]?.stopped).toBe(true);
    // The old registration's late news no longer counts.
    registrations[0]?.registration.onFailed?.(403);
    expect(upkeep.health(1)?.registration).toBe('registering');
    registrations[1]?.registration.onFailed?.(403);
    expect(upkeep.health(1)).toMatchObject({ registration: 'failed', registrationStatus: 403 });
    trunks.set(1, trunk(5060, { register: false, credentials: { username: 'alice', password: 'two' } }));
    await clock.advance(1000);
    expect(registrations[1]?.stopped).toBe(true);
    expect(upkeep.health(1)?.registration).toBe('off');
  });

  it('stops its rounds and waits a bounded time for the trunks to remove their bindings', async () => {
    const trunks = new Map([
      [1, trunk(5060, { register: true, credentials: { username: 'a', password: 'b' } })],
    ]);
    const { clock, pings, registrations, upkeep } = rig(trunks);
    upkeep.start();
    await clock.advance(0);
    let stopped = false;
    const stopping = upkeep.stop().then(() => {
      stopped = true;
    });
    await clock.advance(1999);
    expect(registrations[0]?.stopped).toBe(true);
    expect(stopped).toBe(false);
    await clock.advance(1);
    await stopping;
    expect(stopped).toBe(true);
    const sent = pings.length;
    await clock.advance(5000);
    expect(pings).toHaveLength(sent);
    expect(upkeep.health(1)).toBeUndefined();
  });
});

describe('the readiness report’s sip_trunk', () => {
  it('says the agent is off, and nothing else, when no SIP agent runs in the process', () => {
    const adapter = new SipTrunkAdapter();
    expect(adapter.health(1)).toBeUndefined();
    expect(sipTrunkStatus(adapter, 1, { sip_domain: 'trunk.example.com', register: true })).toEqual({
      agent: 'off',
      reachable: null,
      last_status: null,
      rtt_ms: null,
      checked_at: null,
      registration: 'off',
      registration_status: null,
      detail: null,
    });
  });
});
