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

export class LiveCalls {
  constructor(private readonly deps: { db: Db; carriers: Carriers; resolver: ConfigResolver }) {}

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

  /** Asks the carrier to end the call. */
  async hangUp(tenant: Tenant, callId: number): Promise<void> {
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    await adapter.hangUp(credentials, call.callSid!);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.end_requested', { by: 'assistant' });
  }

  /** Asks the carrier to play DTMF tones on the call; false when the carrier has no such command. */
  async sendDigits(tenant: Tenant, callId: number, digits: string): Promise<boolean> {
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    if (!adapter.sendDtmf) return false;
    await adapter.sendDtmf(credentials, call.callSid!, digits);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.digits_sent', { digits, via: 'carrier' });
    return true;
  }

  /** Asks the carrier to move the call to `to` (an E.164 number the assistant was given). */
  async transfer(tenant: Tenant, callId: number, to: string): Promise<void> {
    const { call, adapter, credentials } = await this.#carrier(tenant, callId);
    await adapter.transfer(credentials, call.callSid!, to);
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.transferred', { to });
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
