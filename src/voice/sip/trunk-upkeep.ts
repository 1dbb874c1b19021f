/**
 * Keeping organizations' SIP trunks in view: every `intervalMs` the upkeep lists the organizations
 * that have a trunk, pings each with OPTIONS and records its health, and keeps a registration alive
 * with the trunks that ask for one (`register: true` with credentials). A trunk whose settings change
 * gets a new registration (the old one removed); one that stops registering, or disappears, is
 * unregistered. `health(organizationId)` is what the readiness report shows.
 *
 * Why a round never waits for its pings: one unreachable trunk (a UDP ping takes 64·T1 = 32 s to time
 * out) must not hold up the others. A trunk's next ping waits for its previous one instead, and a ping
 * that has not been answered within `pingTimeoutMs` is recorded as unreachable (408) meanwhile; a
 * refused connection the transport reports (`transportError`) is recorded at once (503).
 */
import type { PacerTimers } from '../../sip/rtp-pacer.js';
import type { Peer } from '../../sip/transaction-common.js';
import type { SipTransportName } from '../../sip/transport-types.js';
import type { RegisterOptions, Registration } from '../../sip/user-agent.js';
import { portPart, type TrunkSettings, transportPart } from './trunk-settings.js';

export type RegistrationState = 'registered' | 'registering' | 'failed' | 'off';

export interface TrunkHealth {
  /** Whether the trunk answered the last OPTIONS (below 500, not 408; a challenge counts); null before. */
  reachable: boolean | null;
  /** The last OPTIONS' final status (408: no answer, 503: not delivered); null before or unresolvable. */
  status: number | null;
  rttMs: number | null;
  checkedAt: Date | null;
  registration: RegistrationState;
  /** The status of the last failed REGISTER, while `registration` is `failed`. */
  registrationStatus: number | null;
  /** Why the trunk could not be checked (its host does not resolve), if so. */
  detail: string | null;
}

export interface TrunkUpkeepDeps {
  ua: {
    ping(
      destination: Peer,
      transport: SipTransportName,
      uri: string,
    ): Promise<{ status: number; rttMs: number }>;
    register(options: RegisterOptions): Registration;
  };
  /** The organizations whose trunk names a `sip_domain`, platform-wide. */
  organizations(): Promise<number[]>;
  /** The organization's trunk (undefined: none any more). */
  trunkOf(organizationId: number): Promise<TrunkSettings | undefined>;
  /** Where the trunk's SIP goes (its host resolved); throws when it does not resolve. */
  destination(trunk: TrunkSettings): Promise<Peer>;
  timers: PacerTimers;
  /** Wall-clock time for `checkedAt` (default `new Date()`). */
  clock?: () => Date;
  /** Between rounds (default 30 s). */
  intervalMs?: number;
  /** A ping unanswered this long counts as unreachable (default 5 s). */
  pingTimeoutMs?: number;
  /** `stop()` waits this long for the trunks to remove their bindings (default 2 s). */
  unregisterWaitMs?: number;
  log: { warn(object: object, message: string): void };
}

export const DEFAULT_INTERVAL_MS = 30_000;
export const REGISTER_EXPIRES_SECONDS = 3600;

/** Alive: any final answer below 500 except 408 (401/407 challenges included). */
export function reachableStatus(status: number): boolean {
  return status < 500 && status !== 408;
}

interface Tracked {
  trunk: TrunkSettings;
  /** Where the trunk is and who we are to it; a change starts afresh (new registration, new health). */
  key: string;
  destination?: Peer;
  health: Omit<TrunkHealth, 'registration' | 'registrationStatus'>;
  registration?: Registration;
  registrationState: RegistrationState;
  registrationStatus: number | null;
  /** The ping on its way, if any (the next waits for it). */
  pinging?: { sentAt: number; settled: boolean };
}

export class TrunkUpkeep {
  readonly #trunks = new Map<number, Tracked>();
  readonly #deps: TrunkUpkeepDeps;
  readonly #intervalMs: number;
  #timer: unknown;
  #round: Promise<void> | undefined;
  #stopped = false;

  constructor(deps: TrunkUpkeepDeps) {
    this.#deps = deps;
    this.#intervalMs = deps.intervalMs ?? DEFAULT_INTERVAL_MS;
  }

  /** Runs a round now, then one every `intervalMs`. */
  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** The trunk's health, or undefined when the organization has no trunk (or none checked yet). */
  health(organizationId: number): TrunkHealth | undefined {
    const tracked = this.#trunks.get(organizationId);
    if (!tracked) return undefined;
    return {
      ...tracked.health,
      registration: tracked.registrationState,
      registrationStatus: tracked.registrationState === 'failed' ? tracked.registrationStatus : null,
    };
  }

  /** One round: the trunks listed again, pinged, registrations started, replaced or stopped. */
  check(): Promise<void> {
    this.#round ??= this.#check().finally(() => {
      this.#round = undefined;
    });
    return this.#round;
  }

  /** The transport could not deliver to `destination`: a ping on its way there failed (503). */
  transportError(destination: Peer, transport: SipTransportName): void {
    for (const tracked of this.#trunks.values()) {
      const target = tracked.destination;
      if (!target || !tracked.pinging || tracked.pinging.settled || tracked.trunk.transport !== transport)
        continue;
      if (!sameHost(target.host, destination.host) || target.port !== destination.port) continue;
      this.#record(tracked, 503, this.#deps.timers.now() - tracked.pinging.sentAt);
      tracked.pinging.settled = true;
    }
  }

  /** Stops the rounds and removes every binding (waiting at most `unregisterWaitMs`). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#deps.timers.clearTimeout(this.#timer);
    await this.#round?.catch(() => undefined);
    const removals = [...this.#trunks.values()].map((tracked) => this.#unregister(tracked));
    this.#trunks.clear();
    await this.#bounded(Promise.all(removals), this.#deps.unregisterWaitMs ?? 2000);
  }

  #schedule(ms: number): void {
    this.#timer = this.#deps.timers.setTimeout(() => {
      void this.check()
        .catch((error: unknown) => this.#deps.log.warn({ err: error }, 'SIP trunk upkeep round failed'))
        .finally(() => {
          if (!this.#stopped) this.#schedule(this.#intervalMs);
        });
    }, ms);
  }

  async #check(): Promise<void> {
    const ids = new Set(await this.#deps.organizations());
    for (const [id, tracked] of this.#trunks) {
      if (ids.has(id)) continue;
      this.#trunks.delete(id);
      void this.#unregister(tracked);
    }
    for (const id of ids) {
      if (this.#stopped) return;
      const trunk = await this.#deps.trunkOf(id).catch((error: unknown) => {
        this.#deps.log.warn({ err: error, organizationId: id }, 'SIP trunk settings not read');
        return null;
      });
      if (trunk === null) continue; // Not read this time: keep what we know.
      if (trunk === undefined) {
        const gone = this.#trunks.get(id);
        this.#trunks.delete(id);
        if (gone) void this.#unregister(gone);
        continue;
      }
      await this.#keep(id, trunk);
    }
  }

  async #keep(organizationId: number, trunk: TrunkSettings): Promise<void> {
    const key = settingsKey(trunk);
    let tracked = this.#trunks.get(organizationId);
    if (tracked && tracked.key !== key) {
      void this.#unregister(tracked);
      tracked = undefined;
    }
    if (!tracked) {
      tracked = {
        trunk,
        key,
        health: { reachable: null, status: null, rttMs: null, checkedAt: null, detail: null },
        registrationState: 'off',
        registrationStatus: null,
      };
      this.#trunks.set(organizationId, tracked);
    }
    if (tracked.registration && !wantsRegistration(trunk)) void this.#unregister(tracked);
    tracked.trunk = trunk;
    let destination: Peer;
    try {
      destination = await this.#deps.destination(trunk);
    } catch (error) {
      tracked.health = {
        reachable: false,
        status: null,
        rttMs: null,
        checkedAt: this.#now(),
        detail: error instanceof Error ? error.message : String(error),
      };
      if (!tracked.registration && wantsRegistration(trunk)) tracked.registrationState = 'failed';
      return;
    }
    if (this.#stopped || this.#trunks.get(organizationId) !== tracked) return;
    tracked.destination = destination;
    if (!tracked.registration && wantsRegistration(trunk)) this.#register(tracked, destination);
    if (tracked.pinging) {
      // Still on its way: unanswered for too long counts as unreachable, and no second ping goes out.
      const waited = this.#deps.timers.now() - tracked.pinging.sentAt;
      if (!tracked.pinging.settled && waited >= (this.#deps.pingTimeoutMs ?? 5000)) {
        this.#record(tracked, 408, waited);
        tracked.pinging.settled = true;
      }
      return;
    }
    this.#ping(tracked, destination);
  }

  #register(tracked: Tracked, destination: Peer): void {
    const { trunk } = tracked;
    const credentials = trunk.credentials;
    if (!credentials) return;
    const registration = this.#deps.ua.register({
      registrar: `sip:${trunk.domain}${portPart(trunk)}${transportPart(trunk.transport)}`,
      aor: `sip:${credentials.username}@${trunk.domain}`,
      destination,
      transport: trunk.transport,
      credentials,
      expiresSeconds: REGISTER_EXPIRES_SECONDS,
    });
    tracked.registration = registration;
    if (tracked.registrationState !== 'registered') tracked.registrationState = 'registering';
    registration.onRegistered = () => {
      if (tracked.registration !== registration) return;
      tracked.registrationState = 'registered';
      tracked.registrationStatus = null;
    };
    registration.onFailed = (status) => {
      if (tracked.registration !== registration) return;
      tracked.registrationState = 'failed';
      tracked.registrationStatus = status;
    };
  }

  #ping(tracked: Tracked, destination: Peer): void {
    const { trunk } = tracked;
    const pinging = { sentAt: this.#deps.timers.now(), settled: false };
    tracked.pinging = pinging;
    const uri = `sip:${trunk.domain}${portPart(trunk)}${transportPart(trunk.transport)}`;
    void this.#deps.ua
      .ping(destination, trunk.transport, uri)
      .catch(() => ({ status: 503, rttMs: this.#deps.timers.now() - pinging.sentAt }))
      .then(({ status, rttMs }) => {
        if (tracked.pinging === pinging) tracked.pinging = undefined;
        if (pinging.settled) return;
        pinging.settled = true;
        this.#record(tracked, status, rttMs);
      });
  }

  #record(tracked: Tracked, status: number, rttMs: number): void {
    const reachable = reachableStatus(status);
    tracked.health = {
      reachable,
      status,
      rttMs: reachable ? Math.round(rttMs * 10) / 10 : null,
      checkedAt: this.#now(),
      detail: null,
    };
  }

  async #unregister(tracked: Tracked): Promise<void> {
    const registration = tracked.registration;
    tracked.registration = undefined;
    tracked.registrationState = 'off';
    tracked.registrationStatus = null;
    await registration?.stop().catch(() => undefined);
  }

  #bounded(work: Promise<unknown>, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.#deps.timers.setTimeout(resolve, ms);
      void work.finally(() => {
        this.#deps.timers.clearTimeout(timer);
        resolve();
      });
    });
  }

  #now(): Date {
    return this.#deps.clock?.() ?? new Date();
  }
}

function wantsRegistration(trunk: TrunkSettings): boolean {
  return trunk.register && trunk.credentials !== undefined;
}

/** The settings a registration (and a trunk's health) depends on. */
function settingsKey(trunk: TrunkSettings): string {
  const { domain, port, transport, credentials } = trunk;
  return JSON.stringify([domain, port, transport, credentials?.username, credentials?.password]);
}

/** IPv4-mapped IPv6 addresses name the same host as their IPv4 form. */
function sameHost(a: string, b: string): boolean {
  const plain = (host: string) => host.replace(/^::ffff:/i, '');
  return plain(a) === plain(b);
}
