/**
 * `sip_trunk` behind the carrier contract: the organization's own SIP trunk, reached by the
 * platform's SIP agent (`voice/sip/`) rather than over a carrier's REST API. Services place, hang up,
 * transfer and play keys into a SIP call exactly as they do a carrier's; the agent reports the call's
 * statuses itself (there are no webhooks to verify) and streams its audio straight into the runtime.
 *
 * The agent is built after the services it reports to, so it is bound here once it listens; until
 * then — or when SIP is disabled — every call is refused with a permanent ProviderError that says so.
 */
import { ProviderError } from '../errors.js';
import type {
  CallSnapshot,
  CarrierAdapter,
  CarrierCredentials,
  CredentialCheck,
  PlaceCallRequest,
  PlacedCall,
  SentMessage,
  WebhookOwner,
} from './types.js';

/** What the SIP agent does for the adapter; credentials are the trunk's settings (`trunkSettings`). */
export interface SipCallControl {
  placeCall(trunk: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall>;
  hangUp(callSid: string): Promise<void>;
  transfer(trunk: CarrierCredentials, callSid: string, to: string): Promise<void>;
  sendDigits(callSid: string, digits: string): Promise<void>;
  /** An OPTIONS ping to the trunk: alive when it answers at all (a challenge counts). */
  probe(trunk: CarrierCredentials): Promise<CredentialCheck>;
  /** The organization's trunk as the agent's upkeep last checked it; undefined when it has none. */
  health(organizationId: number): SipTrunkHealth | undefined;
  /** A call this process holds, with its current status; undefined for any other. */
  lookupCall(callSid: string): Promise<CallSnapshot | undefined>;
}

/** A trunk's health (`voice/sip/trunk-upkeep.ts`). */
export interface SipTrunkHealth {
  reachable: boolean | null;
  status: number | null;
  rttMs: number | null;
  checkedAt: Date | null;
  registration: 'registered' | 'registering' | 'failed' | 'off';
  registrationStatus: number | null;
  detail: string | null;
}

const PROVIDER = 'sip_trunk' as const;

export class SipTrunkAdapter implements CarrierAdapter {
  readonly id = PROVIDER;
  #agent: SipCallControl | undefined;

  /** The agent listens: calls go through it from now on. */
  bind(agent: SipCallControl | undefined): void {
    this.#agent = agent;
  }

  /** Whether the SIP agent runs in this process. */
  get running(): boolean {
    return this.#agent !== undefined;
  }

  /** The trunk's health; undefined when the agent is off or the organization has no trunk. */
  health(organizationId: number): SipTrunkHealth | undefined {
    return this.#agent?.health(organizationId);
  }

  #control(): SipCallControl {
    if (!this.#agent)
      throw new ProviderError(
        'The SIP agent is not running (SIP_ENABLED=false): SIP trunk calls are unavailable',
        {
          provider: PROVIDER,
          retryable: false,
        },
      );
    return this.#agent;
  }

  placeCall(credentials: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall> {
    return this.#control().placeCall(credentials, request);
  }

  hangUp(_credentials: CarrierCredentials, callSid: string): Promise<void> {
    return this.#control().hangUp(callSid);
  }

  transfer(credentials: CarrierCredentials, callSid: string, to: string): Promise<void> {
    return this.#control().transfer(credentials, callSid, to);
  }

  sendDtmf(_credentials: CarrierCredentials, callSid: string, digits: string): Promise<void> {
    return this.#control().sendDigits(callSid, digits);
  }

  async sendMessage(): Promise<SentMessage> {
    throw new ProviderError('A SIP trunk carries calls only: send messages from a carrier number', {
      provider: PROVIDER,
      retryable: false,
    });
  }

  /**
   * The call as this process's agent holds it; undefined when it holds none such (another process
   * does, or it ended: its record has the end, or the agent that held it settles it when it starts).
   */
  async lookupCall(_credentials: CarrierCredentials, callSid: string): Promise<CallSnapshot | undefined> {
    return this.#agent?.lookupCall(callSid);
  }

  async validateCredentials(credentials: CarrierCredentials): Promise<CredentialCheck> {
    if (!this.#agent) return { valid: false, detail: 'the SIP agent is not running (SIP_ENABLED=false)' };
    return this.#agent.probe(credentials);
  }

  // A trunk sends no webhooks: nothing reaches the carrier-webhook routes for it.
  identifyWebhook(): WebhookOwner {
    return {};
  }

  verifyWebhook(): boolean {
    return false;
  }

  parseWebhook(): [] {
    return [];
  }
}
