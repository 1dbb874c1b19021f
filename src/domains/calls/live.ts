/**
 * What the live call runtime does to a call record while the call runs: notes events (a vendor
 * switch, an interruption, a tool), records an answering machine it found, and ends or transfers the
 * call at its carrier when the assistant decides to (the built-in end_call and transfer_call tools,
 * the idle goodbye). Transcript segments
 * and turns go through CallRecords like any other append. The carrier's status callbacks still
 * write the call's status, duration and cost, exactly as for a call the caller ended.
 */
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { type Carriers, isTelephonyProvider } from '../../providers/carriers/index.js';
import { conflict, notFound } from '../errors.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { type MachineSource, recordAnsweredBy } from './answered-by.js';
import * as store from './store.js';

/** A web call is a browser's, not a carrier's (`provider: "web"`, web-calls.ts). */
export const WEB_PROVIDER = 'web';

/** The web calls' streams this process serves (voice/web-call.ts): what ends one from here. */
export interface WebCallStreamsEnd {
  /** Ends the call's stream with `reason`; false when this process holds no stream of it. */
  end(callId: number, reason: string): boolean;
}

export class LiveCalls {
  constructor(
    private readonly deps: {
      db: Db;
      carriers: Carriers;
      resolver: ConfigResolver;
      /** Without it, a web call's assistant cannot end it (its browser still can). */
      webCalls?: WebCallStreamsEnd;
    },
  ) {}

  /** The call a media stream belongs to, for the runtime to set up its session. */
  call(tenant: Tenant, callId: number): Promise<store.CallRow | undefined> {
    return store.findCall(this.deps.db, tenant, callId);
  }

  /**
   * Links the call to the graph session it walks (`graph_session_id`), unless it is linked already;
   * the session it is linked to.
   */
  async linkGraphSession(tenant: Tenant, callId: number, sessionId: number): Promise<number | null> {
    const linked = await store.linkGraphSession(this.deps.db, tenant, callId, sessionId);
    if (linked === undefined) throw notFound('Call not found');
    return linked;
  }

  /** Whether the call's line can be moved to another number (a web call's cannot). */
  transferable(call: Pick<store.CallRow, 'provider'>): boolean {
    return call.provider !== WEB_PROVIDER;
  }

  async event(tenant: Tenant, callId: number, type: string, data: Record<string, unknown>): Promise<void> {
    await store.insertCallEvent(this.deps.db, tenant, callId, type, data);
  }

  /**
   * The live session found an answering machine and acts on it (voice/voicemail.ts): the call is
   * recorded as answered by a machine, so its campaign attempt's outcome is `voicemail`.
   */
  async machineAnswered(tenant: Tenant, callId: number, source: MachineSource): Promise<void> {
    await this.deps.db.transaction((tx) => recordAnsweredBy(tx, tenant, callId, 'machine', { source }));
  }

  /** Asks the carrier to end the call; a web call's stream is closed here (its browser told why). */
  async hangUp(tenant: Tenant, callId: number): Promise<void> {
    if (await this.#isWebCall(tenant, callId)) {
      await store.insertCallEvent(this.deps.db, tenant, callId, 'call.end_requested', { by: 'assistant' });
      this.deps.webCalls?.end(callId, 'assistant_ended');
      return;
    }
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    await adapter.hangUp(credentials, call.callSid!);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.end_requested', { by: 'assistant' });
  }

  /** Asks the carrier to play DTMF tones on the call; false when the carrier has no such command. */
  async sendDigits(tenant: Tenant, callId: number, digits: string): Promise<boolean> {
    // A browser has no keypad command: the session plays the tones in the audio.
    if (await this.#isWebCall(tenant, callId)) return false;
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    if (!adapter.sendDtmf) return false;
    await adapter.sendDtmf(credentials, call.callSid!, digits);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.digits_sent', { digits, via: 'carrier' });
    return true;
  }

  /**
   * Asks the carrier to move the call to `to` (an E.164 number the assistant was given). A web call
   * cannot move: the refusal is recorded and its stream ends with that reason.
   */
  async transfer(tenant: Tenant, callId: number, to: string): Promise<void> {
    if (await this.#isWebCall(tenant, callId)) {
      // No phone line to move: recorded, and the call ends as a transfer would have ended it here.
      await store.insertCallEvent(this.deps.db, tenant, callId, 'call.transfer_refused', {
        to,
        reason: 'a web call has no phone line to transfer',
      });
      this.deps.webCalls?.end(callId, 'transfer_unavailable');
      return;
    }
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    await adapter.transfer(credentials, call.callSid!, to);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.transferred', { to });
  }

  async #isWebCall(tenant: Tenant, callId: number): Promise<boolean> {
    const call = await store.findCall(this.deps.db, tenant, callId);
    return call?.provider === WEB_PROVIDER;
  }

  async #carrier(tenant: Tenant, callId: number) {
    const call = await store.findCall(this.deps.db, tenant, callId);
    if (!call) throw notFound('Call not found');
    if (!call.callSid || !isTelephonyProvider(call.provider)) throw conflict('The call is not at a carrier');
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: call.provider,
      assistantId: call.assistantId,
    });
    if (!credentials) throw conflict(`No ${call.provider} credentials to reach the carrier with`);
    return { call, adapter: this.deps.carriers[call.provider], credentials };
  }
}
