/**
 * The platform's SIP agent: the user agent on its sockets, the RTP port range, and the calls that go
 * through organizations' own trunks (numbers on `sip_trunk`). It is the `sip_trunk` carrier's other
 * half (`providers/carriers/sip-trunk.ts`): services place, end, transfer and key calls through the
 * adapter exactly as through a carrier's; here each becomes an INVITE through the organization's
 * trunk (`trunkSettings`), or, inbound, an INVITE the trunk sends us, admitted by `admitInvite`.
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
import { header } from '../../sip/headers.js';
import { type MediaPorts, PortRange, PortRangeExhaustedError } from '../../sip/port-range.js';
import { systemTimers } from '../../sip/rtp-pacer.js';
import { answerOffer, type LocalSdp, makeOffer, newSessionId, readAnswer } from '../../sip/sdp.js';
import type { Peer } from '../../sip/transaction-common.js';
import { SipTransport } from '../../sip/transport.js';
import { parseUri } from '../../sip/uri.js';
import { type IncomingCall, type OutgoingCall, UserAgent } from '../../sip/user-agent.js';
import { MULAW_8K } from '../audio.js';
import { snapshotOf } from './holder.js';
import { admitInvite, type InboundDeps } from './inbound.js';
import type { SipMetrics } from './metrics.js';
import { TrunkCall } from './trunk-call.js';
import { portPart, type TrunkSettings, transportPart, trunkSettings } from './trunk-settings.js';
import { type TrunkHealth, TrunkUpkeep } from './trunk-upkeep.js';
import type { CallStatusEvent, SipRuntime } from './types.js';

const PROVIDER = 'sip_trunk';

export interface SipAgentDeps {
  config: SipConfig;
  /** Signs the nonces of inbound digest challenges (the platform's secret). */
  secret: Buffer;
  runtime: SipRuntime;
  calls: {
    applyStatus(organizationId: number, callId: number, event: CallStatusEvent): Promise<unknown>;
    startInbound(
      tenant: Tenant,
      number: { id: number; assistantId: number | null; provider: string; phoneNumber: string },
      event: { kind: 'inbound_call'; callSid: string; from: string; to: string },
    ): Promise<{ id: number } | undefined>;
  };
  inbound: Omit<InboundDeps, 'nonces' | 'realm'>;
  tenantOf(organizationId: number): Tenant;
  metrics?: SipMetrics;
  log: { info(object: object, message: string): void; warn(object: object, message: string): void };
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
  readonly #ports: PortRange;
  #transport!: SipTransport;
  #ua!: UserAgent;
  readonly #inbound: InboundDeps;
  #upkeep: TrunkUpkeep | undefined;

  private constructor(private readonly deps: SipAgentDeps) {
    this.#ports = new PortRange({
      min: deps.config.rtpPorts.min,
      max: deps.config.rtpPorts.max,
      host: deps.config.host,
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
      onInvite: (call) => void agent.#answer(call),
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
    const ports = await this.#allocate();
    const local = this.#localSdp(ports);
    const transport = trunk.transport;
    const domain = trunk.domain;
    let outgoing: OutgoingCall;
    try {
      outgoing = this.#ua.invite({
        requestUri: `sip:${request.to}@${domain}${portPart(trunk)}${transportPart(transport)}`,
        from: { uri: `sip:${request.from}@${domain}` },
        to: `sip:${request.to}@${domain}`,
        destination,
        transport,
        sdp: makeOffer(local),
        ...(trunk.credentials ? { credentials: trunk.credentials } : {}),
        ringTimeoutMs: (request.timeoutSeconds ?? this.deps.config.ringTimeoutSeconds) * 1000,
      });
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
    const call = this.#track(tenant, request.callId, outgoing.callId, 'outbound', ports);
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
    try {
      await this.#call(callSid).transfer(`sip:${to}@${trunk.domain}${portPart(trunk)}`);
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

  /** An inbound INVITE: admitted (or challenged, or refused), then answered by the number's assistant. */
  async #answer(incoming: IncomingCall): Promise<void> {
    const { log, metrics } = this.deps;
    const requestUri = incoming.request.uri;
    const authorization = header(incoming.request, 'Authorization');
    const admission = await admitInvite(
      {
        dialled: userOf(requestUri) ?? userOf(incoming.to) ?? '',
        source: incoming.source,
        requestUri,
        ...(authorization ? { authorization } : {}),
      },
      this.#inbound,
    ).catch((error: unknown) => {
      log.warn({ err: error }, 'SIP admission failed');
      return undefined;
    });
    if (!admission) return incoming.reject(500);
    if (admission.kind === 'challenge')
      return incoming.reject(401, [{ name: 'WWW-Authenticate', value: admission.header }]);
    if (admission.kind === 'refuse') {
      metrics?.refused(admission.why);
      log.warn({ source: incoming.source, why: admission.why }, 'SIP INVITE refused');
      return incoming.reject(admission.status);
    }
    const ports = await this.#allocate().catch(() => undefined);
    if (!ports) return incoming.reject(503);
    const answer = answerOffer(incoming.sdp, this.#localSdp(ports));
    if (!answer.ok) {
      await this.#ports.release(ports);
      return incoming.reject(answer.refusal.status);
    }
    const { number } = admission;
    const tenant = this.deps.tenantOf(number.organizationId);
    const caller = userOf(incoming.from) ?? incoming.from;
    const record = await this.deps.calls
      .startInbound(tenant, number, {
        kind: 'inbound_call',
        callSid: incoming.callId,
        from: caller,
        to: number.phoneNumber,
      })
      .catch((error: unknown) => {
        log.warn({ err: error }, 'recording an inbound SIP call failed');
        return undefined;
      });
    if (!record || incoming.phase !== 'pending') {
      await this.#ports.release(ports);
      // The caller gave up (CANCEL) while the call was being recorded: its record ends too.
      if (record)
        await this.deps.calls
          .applyStatus(tenant.organizationId, record.id, {
            kind: 'call_status',
            callSid: incoming.callId,
            status: 'canceled',
            durationSeconds: 0,
          })
          .catch(() => undefined);
      return incoming.reject(480);
    }
    incoming.ringing();
    const call = this.#track(tenant, record.id, incoming.callId, 'inbound', ports);
    call.leg = {
      hangUp: () => void incoming.bye().catch(() => undefined),
      refer: (target) => referAndWait(incoming, target),
    };
    this.deps.runtime.prepare?.(
      tenant,
      record.id,
      answer.media.codec === 'PCMA' ? { encoding: 'alaw', sampleRate: 8000 } : MULAW_8K,
    );
    incoming.onConfirmed = () => call.answered(answer.media);
    incoming.onCancelled = () => call.failed({ status: 487, reason: 'Request Terminated' });
    incoming.onEnded = (end) => call.ended(end.by);
    incoming.accept(answer.sdp);
  }

  #track(
    tenant: Tenant,
    callId: number,
    callSid: string,
    direction: 'inbound' | 'outbound',
    ports: MediaPorts,
  ): TrunkCall {
    const call = new TrunkCall({
      tenant,
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

  async #allocate(): Promise<MediaPorts> {
    try {
      return await this.#ports.allocate();
    } catch (error) {
      if (error instanceof PortRangeExhaustedError)
        throw new ProviderError('Every RTP port is in use (RTP_PORT_MIN–RTP_PORT_MAX)', {
          provider: PROVIDER,
          retryable: true,
          status: 503,
        });
      throw error;
    }
  }

  #localSdp(ports: MediaPorts): LocalSdp {
    return { address: this.deps.config.publicHost, port: ports.port, sessionId: newSessionId(), version: 1 };
  }
}

/** How long a transfer waits for the trunk's NOTIFY saying how the new call went. */
const TRANSFER_NOTIFY_WAIT_MS = 5000;

/**
 * REFER, then wait for the NOTIFY whose sipfrag is final (RFC 3515, RFC 5589 §6): 200 means the far
 * end reached the target and our leg may go; a failure keeps the call with us. A trunk that accepted
 * the REFER but never says how it went counts as done after a few seconds.
 */
async function referAndWait(
  call: { refer(target: string): Promise<number>; onReferProgress?: (status: number) => void },
  target: string,
): Promise<number> {
  let settle: (status: number) => void = () => {};
  const notified = new Promise<number>((resolve) => {
    settle = resolve;
  });
  call.onReferProgress = (status) => {
    if (status >= 200) settle(status);
  };
  const status = await call.refer(target);
  if (status < 200 || status >= 300) return status;
  const timer = setTimeout(() => settle(status), TRANSFER_NOTIFY_WAIT_MS);
  const final = await notified;
  clearTimeout(timer);
  return final;
}

function permanent(message: string): ProviderError {
  return new ProviderError(message, { provider: PROVIDER, retryable: false });
}

/** The user part of a SIP URI (`sip:+14155550100@host` → `+14155550100`). */
function userOf(uri: string): string | undefined {
  try {
    return parseUri(uri).user ?? undefined;
  } catch {
    return undefined;
  }
}
