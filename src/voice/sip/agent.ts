/**
 * The platform's SIP agent: the user agent on its sockets, the RTP port range, and the calls that go
 * through organizations' own trunks (numbers on `sip_trunk`). It is the `sip_trunk` carrier's other
 * half (`providers/carriers/sip-trunk.ts`): services place, end, transfer and key calls through the
 * adapter exactly as through a carrier's; here each becomes an INVITE through the organization's
 * trunk (`trunkSettings`), or, inbound, an INVITE the trunk sends us, admitted and answered by
 * `answerInbound` (inbound-call.ts).
 * Every call is a `TrunkCall`: its statuses go to `CallService.applyStatus`, its audio to the voice
 * runtime, like a carrier's media stream. The trunks themselves are kept in view by its
 * `TrunkUpkeep` (OPTIONS pings as their health, registrations), started and stopped with it.
 *
 * Calls live in the process whose agent holds their dialog; the agent answers only on its own
 * sockets, so the trunk keeps talking to the process that set the call up.
 */

import type { SipConfig } from '../../config.js';
import type { Tenant } from '../../db/tenant.js';
import type { SipCallControl } from '../../providers/carriers/sip-trunk.js';
import type {
  CarrierCredentials,
  CredentialCheck,
  PlaceCallRequest,
  PlacedCall,
} from '../../providers/carriers/types.js';
import { ProviderError } from '../../providers/errors.js';
import { createNonceIssuer } from '../../sip/digest-server.js';
import { systemTimers } from '../../sip/rtp-pacer.js';
import { makeOffer, readAnswer } from '../../sip/sdp.js';
import type { Peer } from '../../sip/transaction-common.js';
import { SipTransport } from '../../sip/transport.js';
import { type OutgoingCall, UserAgent } from '../../sip/user-agent.js';
import { type AudioFormat, MULAW_8K } from '../audio.js';
import { type BridgeDialing, dialBridgeLeg } from './bridge-leg.js';
import { CallPorts } from './call-ports.js';
import { snapshotOf } from './holder.js';
import type { InboundDeps } from './inbound.js';
import { answerInbound, type TrackedCall } from './inbound-call.js';
import type { SipMetrics } from './metrics.js';
import { referAndWait } from './transfer.js';
import { TrunkCall } from './trunk-call.js';
import { portPart, type TrunkSettings, transportPart, trunkSettings } from './trunk-settings.js';
import { type TrunkHealth, TrunkUpkeep } from './trunk-upkeep.js';
import type { SipCallRecords, SipLog, SipRuntime } from './types.js';

const PROVIDER = 'sip_trunk';

export interface SipAgentDeps {
  config: SipConfig;
  /** Signs the nonces of inbound digest challenges (the platform's secret). */
  secret: Buffer;
  runtime: SipRuntime;
  calls: SipCallRecords;
  inbound: Omit<InboundDeps, 'nonces' | 'realm'>;
  tenantOf(organizationId: number): Tenant;
  metrics?: SipMetrics;
  log: SipLog;
  /** Resolves the trunk's host for outbound calls (the inbound deps' resolver by default). */
  lookup?: (host: string) => Promise<string[]>;
  /** The trunks to keep in view (OPTIONS pings, registrations): none without it. */
  trunks?: {
    organizations(): Promise<number[]>;
    trunkOf(organizationId: number): Promise<TrunkSettings | undefined>;
    intervalMs?: number;
  };
}

export class SipAgent implements SipCallControl {
  readonly #calls = new Map<string, TrunkCall>();
  readonly #ports: CallPorts;
  #transport!: SipTransport;
  #ua!: UserAgent;
  readonly #inbound: InboundDeps;
  #upkeep: TrunkUpkeep | undefined;

  private constructor(private readonly deps: SipAgentDeps) {
    this.#ports = new CallPorts({
      ...deps.config.rtpPorts,
      host: deps.config.host,
      publicHost: deps.config.publicHost,
    });
    this.#inbound = {
      ...deps.inbound,
      nonces: createNonceIssuer({ secret: deps.secret }),
      realm: deps.config.publicHost,
    };
  }

  /** Listens on the configured SIP port (UDP and TCP, TLS when configured). */
  static async start(deps: SipAgentDeps, tls?: { cert: Buffer; key: Buffer }): Promise<SipAgent> {
    const agent = new SipAgent(deps);
    const { config } = deps;
    agent.#transport = await SipTransport.listen({
      host: config.host,
      port: config.port,
      publicHost: config.publicHost,
      ...(config.tls && tls ? { tls: { port: config.tls.port, ...tls } } : {}),
      onMessage: (message, source, transport) => agent.#ua.receive(message, source, transport),
      onTransportError: (destination, _error, transport) =>
        agent.#upkeep?.transportError(destination, transport),
      log: { warn: (object, message) => deps.log.warn(object, message) },
    });
    agent.#ua = new UserAgent({
      transport: agent.#transport,
      timers: systemTimers,
      log: { warn: (object, message) => deps.log.warn(object, message), debug: () => {} },
      onInvite: (call) =>
        void answerInbound(call, {
          ...deps,
          admission: agent.#inbound,
          ports: agent.#ports,
          track: (tracked) => agent.#track(tracked),
        }),
    });
    if (deps.trunks) {
      agent.#upkeep = new TrunkUpkeep({
        ua: agent.#ua,
        organizations: deps.trunks.organizations,
        trunkOf: deps.trunks.trunkOf,
        destination: (trunk) => agent.#destination(trunk),
        timers: systemTimers,
        ...(deps.trunks.intervalMs === undefined ? {} : { intervalMs: deps.trunks.intervalMs }),
        log: deps.log,
      });
      agent.#upkeep.start();
    }
    deps.metrics?.countMalformed(() => agent.#transport.stats.parseErrors);
    deps.log.info({ sip: agent.address }, 'SIP agent listening');
    return agent;
  }

  /** Where the agent listens (UDP and TCP). */
  get address(): Peer {
    return this.#transport.localAddress('udp');
  }

  /** Calls the agent holds (for tests and metrics). */
  get activeCalls(): number {
    return this.#calls.size;
  }

  get parseErrors(): number {
    return this.#transport.stats.parseErrors;
  }

  async placeCall(values: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall> {
    const trunk = trunkSettings(values);
    if (!trunk) throw permanent('The organization has no SIP trunk (sip_trunk_config.sip_domain)');
    if (request.organizationId === undefined) throw permanent('A SIP call needs its organization');
    const destination = await this.#destination(trunk);
    const ports = await this.#ports.allocate();
    const local = this.#ports.localSdp(ports);
    let outgoing: OutgoingCall;
    try {
      outgoing = this.#invite(
        trunk,
        destination,
        request,
        makeOffer(local),
        (request.timeoutSeconds ?? this.deps.config.ringTimeoutSeconds) * 1000,
      );
    } catch (error) {
      // The INVITE could not even be handed to a socket (a connection limit, a closed transport).
      await this.#ports.release(ports);
      throw new ProviderError(
        `The INVITE could not be sent: ${error instanceof Error ? error.message : error}`,
        {
          provider: PROVIDER,
          retryable: true,
          cause: error,
        },
      );
    }
    const tenant = this.deps.tenantOf(request.organizationId);
    const call = this.#track({
      tenant,
      callId: request.callId,
      callSid: outgoing.callId,
      direction: 'outbound',
      ports,
      number: request.from,
      mediaSources: [destination.host, ...trunk.inboundAddresses],
    });
    call.placed();
    call.leg = {
      hangUp: () =>
        call.state === 'answered' ? void outgoing.bye().catch(() => undefined) : outgoing.cancel(),
      refer: (target) => referAndWait(outgoing, target),
    };
    outgoing.onProgress = (status) => {
      if (status < 180) return;
      // The greeting is synthesized while the phone rings (μ-law unless the answer says A-law).
      if (call.state === 'setup') this.deps.runtime.prepare?.(tenant, request.callId, MULAW_8K);
      call.ringing();
    };
    outgoing.onAnswered = (sdp) => {
      const read = readAnswer(sdp, local);
      if (!read.ok) {
        this.deps.log.warn(
          { callId: request.callId, detail: read.refusal.detail },
          'SIP answer without usable audio',
        );
        void outgoing.bye().catch(() => undefined);
        call.failed({ status: 488, reason: 'Not Acceptable Here' });
        return;
      }
      call.answered(read.media);
    };
    outgoing.onFailed = (failure) => call.failed(failure, { ringTimedOut: failure.timedOut === true });
    outgoing.onEnded = (end) => call.ended(end.by);
    return { callSid: outgoing.callId, status: 'queued' };
  }

  async hangUp(callSid: string): Promise<void> {
    this.#call(callSid).hangUp();
  }

  async transfer(values: CarrierCredentials, callSid: string, to: string): Promise<void> {
    const trunk = trunkSettings(values);
    if (!trunk) throw permanent('The organization has no SIP trunk (sip_trunk_config.sip_domain)');
    const call = this.#call(callSid);
    try {
      const how = await call.transfer(`sip:${to}@${trunk.domain}${portPart(trunk)}`, (format) =>
        this.#dialBridge(trunk, call.options.number, to, format),
      );
      this.deps.log.info({ callId: call.options.callId, how }, 'SIP call transferred');
    } catch (error) {
      throw permanent(error instanceof Error ? error.message : String(error));
    }
  }

  async sendDigits(callSid: string, digits: string): Promise<void> {
    if (!/^[0-9*#A-Dw]+$/i.test(digits))
      throw new ProviderError('Keys are 0-9, *, #, A-D and w (a pause)', {
        provider: PROVIDER,
        retryable: false,
        code: 'invalid_digits',
      });
    await this.#call(callSid).sendDigits(digits);
  }

  async probe(values: CarrierCredentials): Promise<CredentialCheck> {
    const trunk = trunkSettings(values);
    if (!trunk) return { valid: false, detail: 'no sip_domain' };
    try {
      const destination = await this.#destination(trunk);
      const { status, rttMs } = await this.#ua.ping(
        destination,
        trunk.transport,
        `sip:${trunk.domain}${portPart(trunk)}`,
      );
      const alive = status < 408 || (status > 408 && status < 500);
      return alive
        ? { valid: true, detail: `the trunk answered OPTIONS ${status} in ${Math.round(rttMs)} ms` }
        : { valid: false, detail: `the trunk did not answer OPTIONS (${status})` };
    } catch (error) {
      return { valid: false, detail: error instanceof Error ? error.message : String(error) };
    }
  }

  async lookupCall(callSid: string) {
    return snapshotOf(this.#calls.get(callSid));
  }

  /** The organization's trunk as last checked (undefined: no trunk, or no upkeep). */
  health(organizationId: number): TrunkHealth | undefined {
    return this.#upkeep?.health(organizationId);
  }

  /** Ends every call (BYE, CANCEL) and registration, then closes the sockets. */
  async stop(): Promise<void> {
    await this.#upkeep?.stop();
    for (const call of this.#calls.values()) call.hangUp();
    await this.#ua.close().catch(() => undefined);
    await this.#transport.close();
  }

  #track({ tenant, callId, callSid, direction, ports, number, mediaSources }: TrackedCall): TrunkCall {
    const call = new TrunkCall({
      tenant,
      number,
      mediaSources,
      callId,
      callSid,
      direction,
      ports,
      releasePorts: (held) => this.#ports.release(held),
      runtime: this.deps.runtime,
      report: (event) => this.deps.calls.applyStatus(tenant.organizationId, callId, event),
      ...(this.deps.metrics ? { metrics: this.deps.metrics } : {}),
      log: this.deps.log,
      onEnded: (ended) => {
        if (this.#calls.get(callSid) === ended) this.#calls.delete(callSid);
      },
    });
    this.#calls.set(callSid, call);
    return call;
  }

  /** A transfer's second leg: the target called through the trunk, from the call's own number. */
  async #dialBridge(
    trunk: TrunkSettings,
    from: string,
    to: string,
    format: AudioFormat,
  ): Promise<BridgeDialing> {
    const destination = await this.#destination(trunk);
    const ports = await this.#ports.allocate();
    try {
      return dialBridgeLeg({
        format,
        ports,
        local: this.#ports.localSdp(ports),
        invite: (sdp) =>
          this.#invite(trunk, destination, { from, to }, sdp, this.deps.config.ringTimeoutSeconds * 1000),
        releasePorts: (held) => this.#ports.release(held),
        mediaSources: [destination.host, ...trunk.inboundAddresses],
        log: this.deps.log,
      });
    } catch (error) {
      await this.#ports.release(ports);
      throw error;
    }
  }

  /** An INVITE through the trunk from our number `from` to `to`, offering `sdp`. */
  #invite(
    trunk: TrunkSettings,
    destination: Peer,
    call: { from: string; to: string },
    sdp: string,
    ringTimeoutMs: number,
  ): OutgoingCall {
    const { domain, transport } = trunk;
    return this.#ua.invite({
      requestUri: `sip:${call.to}@${domain}${portPart(trunk)}${transportPart(transport)}`,
      from: { uri: `sip:${call.from}@${domain}` },
      to: `sip:${call.to}@${domain}`,
      destination,
      transport,
      sdp,
      ...(trunk.credentials ? { credentials: trunk.credentials } : {}),
      ringTimeoutMs,
    });
  }

  #call(callSid: string): TrunkCall {
    const call = this.#calls.get(callSid);
    if (!call) throw permanent('No such SIP call in this process (it ended, or another process holds it)');
    return call;
  }

  async #destination(trunk: TrunkSettings): Promise<Peer> {
    const lookup = this.deps.lookup ?? this.deps.inbound.addressesOf;
    const addresses = await lookup(trunk.domain).catch(() => [] as string[]);
    const host = addresses[0];
    if (!host)
      throw new ProviderError(`The trunk's host ${trunk.domain} does not resolve`, {
        provider: PROVIDER,
        retryable: true,
      });
    return { host, port: trunk.port };
  }
}

function permanent(message: string): ProviderError {
  return new ProviderError(message, { provider: PROVIDER, retryable: false });
}
