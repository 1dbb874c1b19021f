/**
 * A call's hold on limited vendor keys (domains/leases). When a call is set up, each kind it needs —
 * voice, hearing, language model — gets the first key in plan order that the call may use: a key
 * without a limit, or a limited key the call could lease. Keys at their limit are left out of the
 * call's plan (and the reason recorded); when every key of a kind is at its limit the call cannot be
 * served and is turned away with an apology (`busy-apology.ts`). Keys further down the plan stay for
 * failover, guarded: the adapters are wrapped so that a limited key is leased the moment the call
 * first turns to it, and refused like a failed handshake when it is at its limit. The call holds its
 * leases, renewed by a heartbeat, until it ends.
 */
import type { Tenant } from '../db/tenant.js';
import type { VendorLeases } from '../domains/leases/service.js';
import { ProviderError } from '../providers/errors.js';
import type { LlmAdapter } from '../providers/llm/types.js';
import type { SttAdapter } from '../providers/stt/types.js';
import type { TtsAdapter } from '../providers/tts/types.js';
import type { SessionSpec } from './session-spec.js';
import type { Candidate, VendorPlan } from './vendors.js';

export type LeasedKind = 'llm' | 'stt' | 'tts';

/** How the apology can be said in the assistant's own voice (when the voice is not what ran out). */
export interface ApologyVoice {
  adapter: TtsAdapter;
  candidates: Candidate[];
  voice: SessionSpec['tts']['voice'];
}

/** Every key of a kind the call needs is at its limit: the call is turned away. */
export class LimitReached {
  constructor(
    readonly kind: LeasedKind,
    /** For the call's record, e.g. `tts: every key at its concurrent_limit`. */
    readonly reason: string,
    readonly voice?: ApologyVoice,
  ) {}
}

type PreparedSpec = Omit<SessionSpec, 'send'>;

/** The leases one call holds, and their heartbeat. */
export class CallLeases {
  /** `provider\nkeyRef` of every key the call holds. */
  readonly #held = new Map<string, { kind: LeasedKind; candidate: Candidate }>();
  #heartbeat: NodeJS.Timeout | undefined;
  #released = false;

  constructor(
    private readonly leases: VendorLeases,
    readonly tenant: Tenant,
    readonly callId: number,
    private readonly log: { warn(data: object, message: string): void },
  ) {}

  /** True when the call may use `candidate` now: it has no limit, or the call holds (or just took) it. */
  async hold(kind: LeasedKind, candidate: Candidate): Promise<boolean> {
    const limit = candidate.limit;
    if (!limit) return true;
    if (this.#released) return false;
    const id = `${candidate.provider}\n${limit.keyRef}`;
    if (this.#held.has(id)) return true;
    const key = { kind, provider: candidate.provider, keyRef: limit.keyRef };
    if (!(await this.leases.acquire(this.tenant, this.callId, key, limit.max))) return false;
    if (this.#released) {
      // The call ended while the lease was being taken: give it back at once.
      await this.leases.release(this.tenant, this.callId);
      return false;
    }
    this.#held.set(id, { kind, candidate });
    this.#heartbeat ??= setInterval(() => void this.#renew(), this.leases.timings.heartbeatMs).unref();
    return true;
  }

  /** Gives every key back; the call may take none after this. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    clearInterval(this.#heartbeat);
    if (this.#held.size === 0) return;
    this.#held.clear();
    await this.leases.release(this.tenant, this.callId);
  }

  async #renew(): Promise<void> {
    try {
      const renewed = await this.leases.renew(this.tenant, this.callId);
      if (renewed >= this.#held.size || this.#released) return;
      // A lease went missing (another process that prepared this call gave it back when its wait for
      // the stream ran out, or the renewals stalled past the expiry and it was swept): take it again
      // if there is room. The call goes on either way.
      for (const { kind, candidate } of this.#held.values()) {
        const limit = candidate.limit!;
        const key = { kind, provider: candidate.provider, keyRef: limit.keyRef };
        await this.leases.acquire(this.tenant, this.callId, key, limit.max);
      }
    } catch (error) {
      this.log.warn({ err: error, callId: this.callId }, 'renewing vendor key leases failed');
    }
  }
}

const KINDS: LeasedKind[] = ['tts', 'stt', 'llm'];

/**
 * Leases a key of each kind in `spec`'s plan; the spec to run the call with (keys at their limit left
 * out, the adapters guarded) and why keys were skipped — or what ran out. Leases taken before a kind
 * ran out stay held: the holder's `release` gives them back.
 */
export async function leaseVendors(
  holder: CallLeases,
  spec: PreparedSpec,
): Promise<{ spec: PreparedSpec; skipped: string[] } | LimitReached> {
  const plan: VendorPlan = { ...spec.plan };
  const skipped: string[] = [];
  for (const kind of KINDS) {
    const candidates = spec.plan[kind];
    let chosen = -1;
    for (const [index, candidate] of candidates.entries()) {
      if (await holder.hold(kind, candidate)) {
        chosen = index;
        break;
      }
      skipped.push(
        `${kind}: ${candidate.provider} ${candidate.label} is at its concurrent_limit (${candidate.limit?.max})`,
      );
    }
    if (candidates.length > 0 && chosen < 0) {
      // The voice is leased first: when something else ran out, it can still apologise.
      const adapter = kind !== 'tts' && spec.tts.adapter;
      const voice = adapter
        ? {
            adapter: guarded(adapter, 'open', 'tts', plan.tts, holder),
            candidates: plan.tts,
            voice: spec.tts.voice,
          }
        : undefined;
      return new LimitReached(kind, `${kind}: every key at its concurrent_limit`, voice);
    }
    (plan as unknown as Record<LeasedKind, Candidate[]>)[kind] = candidates.slice(Math.max(chosen, 0));
  }
  const { stt, tts, llmAdapterFor } = spec;
  return {
    spec: {
      ...spec,
      plan,
      stt: { ...stt, adapter: stt.adapter && guarded(stt.adapter, 'open', 'stt', plan.stt, holder) },
      tts: { ...tts, adapter: tts.adapter && guarded(tts.adapter, 'open', 'tts', plan.tts, holder) },
      llmAdapterFor: (provider) => {
        const adapter = llmAdapterFor(provider);
        return adapter && guardedLlm(adapter, plan.llm, holder);
      },
    },
    skipped,
  };
}

/** The plan's candidate a request is for (same key, same address). */
function candidateOf(candidates: Candidate[], apiKey: string | null, baseUrl: string): Candidate | undefined {
  return candidates.find((c) => (c.apiKey ?? '') === (apiKey ?? '') && c.baseUrl === baseUrl);
}

function atLimit(candidate: Candidate): ProviderError {
  return new ProviderError(`${candidate.label} is at its concurrent_limit`, {
    provider: candidate.provider,
    retryable: true,
    code: 'concurrent_limit',
  });
}

/** `adapter` whose `method` first makes sure the call may use the key it is given. */
function guarded<T extends SttAdapter | TtsAdapter>(
  adapter: T,
  method: 'open',
  kind: LeasedKind,
  candidates: Candidate[],
  holder: CallLeases,
): T {
  const open = async (options: { apiKey: string; baseUrl: string }) => {
    const candidate = candidateOf(candidates, options.apiKey, options.baseUrl);
    if (candidate && !(await holder.hold(kind, candidate))) throw atLimit(candidate);
    return (adapter.open as (o: typeof options) => Promise<unknown>).call(adapter, options);
  };
  return delegate(adapter, method, open);
}

function guardedLlm(adapter: LlmAdapter, candidates: Candidate[], holder: CallLeases): LlmAdapter {
  async function* stream(request: Parameters<LlmAdapter['stream']>[0]) {
    const candidate = candidateOf(candidates, request.apiKey, request.baseUrl);
    if (candidate && !(await holder.hold('llm', candidate))) throw atLimit(candidate);
    yield* adapter.stream(request);
  }
  return delegate(adapter, 'stream', stream);
}

/** A stand-in for `target` with one method replaced; everything else is the target's own. */
function delegate<T extends object>(target: T, method: string, replacement: unknown): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === method) return replacement;
      const value = Reflect.get(object, property, object);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}
