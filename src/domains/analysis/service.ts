/**
 * After-call analysis (issue 19, item 6): a summary, the caller's sentiment, and the structured data
 * the assistant's `custom_settings` ask for, worked out by the assistant's own language model once
 * the call has ended, stored on `call_analyses`, sent as a `call.analyzed` webhook, and handed to
 * whoever listens (a campaign's execution keeps the sentiment).
 *
 * When: in the transaction that gives a call its final status (`callFinished`, a listener of the
 * calls service), the call gets its row — `pending` with a `call.analyze` job, or `skipped` when no
 * conversation could have happened (no assistant, never answered). The job starts a few seconds
 * later, not at once: the carrier's final status may overtake the media stream's close, and the
 * transcript's last words are written as the stream ends, possibly by another process than the one
 * that took the status webhook. A delay works across processes and costs nothing when it is not
 * needed, where waiting for the stream's end event would need that event to cross processes.
 *
 * The job settles its row once: completed (and the webhook and listeners, in the same transaction),
 * skipped when the caller said nothing, or failed with the reason — at once when no candidate model
 * can ever answer (no key, keys refused), else on the job's last try.
 */
import type { ProviderUrls } from '../../config.js';
import type { Db, Executor } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import type { OutboundTargets } from '../../lib/outbound-target.js';
import { llmAdapterFor } from '../../providers/llm/index.js';
import type { LlmAdapter } from '../../providers/llm/types.js';
import { jobPolicies } from '../../queue/jobs.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { planVendors } from '../../voice/vendors.js';
import { assistantEventUrls } from '../assistants/reads.js';
import { type CallRow, findCall, transcriptOf } from '../calls/reads.js';
import { notFound } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { CALL_ANALYZED_EVENT_TYPE } from '../webhooks/events.js';
import type { WebhookService } from '../webhooks/service.js';
import { askModel, ModelFailed } from './model.js';
import { readSummaryAnswer } from './parse.js';
import { summaryMessages, type TranscriptLine } from './prompts.js';
import * as store from './store.js';
import { extractStructured, structuredSettingsOf } from './structured.js';
import { analysisEventData } from './views.js';

export type { AnalysisRow } from './store.js';

/** Seconds between a call's final status and its analysis (see the file comment). */
const DEFAULT_START_AFTER_SECONDS = 5;
/** The longest one model may take for one whole answer. */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * Told, in the transaction that completes an analysis, what it found. Campaigns keep the sentiment
 * on the call's execution so.
 */
export type CallAnalyzedListener = (
  tx: Executor,
  tenant: Tenant,
  analysis: store.AnalysisRow,
  call: CallRow,
) => Promise<void>;

export interface AnalysisLogger {
  warn(details: object, message: string): void;
}

export interface AnalysisServiceDeps {
  db: Db;
  queue: JobQueue;
  resolver: ConfigResolver;
  webhooks: WebhookService;
  /** The platform's vendor addresses and outbound-target policy, as the call runtime uses them. */
  urls: ProviderUrls;
  targets: OutboundTargets;
  log: AnalysisLogger;
  adapterFor?: (provider: string) => LlmAdapter | undefined;
  startAfterSeconds?: number;
  requestTimeoutMs?: number;
  /** Retries after the first attempt (default: the `call.analyze` job policy). */
  retryLimit?: number;
}

/** A failure the job's retries cannot cure, or that happened on its last try. */
class Settled extends Error {}

export class AnalysisService {
  readonly #listeners: CallAnalyzedListener[] = [];
  readonly #retryLimit: number;

  constructor(private readonly deps: AnalysisServiceDeps) {
    this.#retryLimit = deps.retryLimit ?? jobPolicies['call.analyze'].retryLimit;
  }

  /** Adds a listener for completed analyses (see CallAnalyzedListener). */
  onCallAnalyzed(listener: CallAnalyzedListener): void {
    this.#listeners.push(listener);
  }

  /**
   * A call reached its final status (a CallFinishedListener, in that transaction): its row, and the
   * job when there may be a conversation to analyse.
   */
  async callFinished(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, call: CallRow): Promise<void> {
    const skipped =
      call.assistantId === null
        ? 'the call had no assistant'
        : call.status !== 'completed'
          ? `the call was not answered (${call.status})`
          : undefined;
    if (skipped) {
      await store.insertAnalysis(tx, tenant, call.id, { status: 'skipped', error: skipped });
      return;
    }
    const row = await store.insertAnalysis(tx, tenant, call.id, { status: 'pending' });
    if (!row) return;
    await jobs.enqueue(
      'call.analyze',
      { call_id: call.id, organization_id: tenant.organizationId },
      { startAfterSeconds: this.deps.startAfterSeconds ?? DEFAULT_START_AFTER_SECONDS },
    );
  }

  /** A call's analysis as the API shows it; 404 for a call not the caller's, or not analysed (yet). */
  async get(principal: Principal, callId: number): Promise<store.AnalysisRow> {
    const call = await findCall(this.deps.db, principal.tenant, callId);
    if (!call) throw notFound('Call not found');
    const row = await store.findAnalysis(this.deps.db, principal.tenant, callId);
    if (!row) throw notFound('The call has no analysis: it has not ended yet');
    return row;
  }

  /** `call.analyze`: settles the call's pending row (see the file comment). Harmless when run twice. */
  async run(payload: { call_id: number; organization_id: number }, job: { retryCount: number }) {
    const tenant = new Tenant(payload.organization_id);
    const callId = payload.call_id;
    // Many calls reach no conversation (voicemail left unanswered, a silent line): one statement each.
    if (await store.skipIfNothingSaid(this.deps.db, tenant, callId)) return;
    const row = await store.findAnalysis(this.deps.db, tenant, callId);
    if (row?.status !== 'pending') return;
    const call = await findCall(this.deps.db, tenant, callId);
    if (!call) return;
    try {
      const result = await this.#analyse(tenant, call);
      if (result === 'nothing said') {
        await store.settleAnalysis(this.deps.db, tenant, callId, {
          status: 'skipped',
          error: store.NOTHING_SAID,
        });
        return;
      }
      await this.deps.queue.transaction(async (tx, jobs) => {
        const settled = await store.settleAnalysis(tx, tenant, callId, { status: 'completed', result });
        if (!settled) return;
        await this.#emit(tx, jobs, tenant, settled, call);
        for (const listener of this.#listeners) await listener(tx, tenant, settled, call);
      });
    } catch (error) {
      const last = job.retryCount >= this.#retryLimit;
      if (!(error instanceof Settled) && !last) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      this.deps.log.warn({ callId, err: error, attempt: job.retryCount + 1 }, 'call analysis failed');
      await store.settleAnalysis(this.deps.db, tenant, callId, { status: 'failed', error: reason });
    }
  }

  async #analyse(tenant: Tenant, call: CallRow): Promise<store.AnalysisResult | 'nothing said'> {
    const transcript = await transcriptOf(this.deps.db, tenant, call.id);
    const lines: TranscriptLine[] = transcript
      .filter((segment) => segment.text.trim() !== '')
      .map((segment) => ({ speaker: segment.speaker, text: segment.text }));
    if (!lines.some((line) => line.speaker === 'user')) return 'nothing said';
    if (call.assistantId === null) throw new Settled('the assistant was deleted before the analysis');
    const resolved = await this.deps.resolver.resolve(tenant, { assistantId: call.assistantId });
    if (!resolved) throw new Settled('the assistant was deleted before the analysis');
    const plan = await planVendors(resolved, this.deps.urls, this.deps.targets);
    const options = {
      adapterFor: this.deps.adapterFor ?? llmAdapterFor,
      timeoutMs: this.deps.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    };
    const ask = async (
      messages: Parameters<typeof askModel>[1],
      accept?: (text: string) => string | undefined,
    ) => {
      try {
        return await askModel(plan.llm, messages, { ...options, ...(accept ? { accept } : {}) });
      } catch (error) {
        if (error instanceof ModelFailed && error.permanent) throw new Settled(error.message);
        throw error;
      }
    };

    const summaryAnswer = await ask(summaryMessages(lines), (text) => {
      const read = readSummaryAnswer(text);
      return 'error' in read ? read.error : undefined;
    });
    const summary = readSummaryAnswer(summaryAnswer.text);
    if ('error' in summary) throw new Error(summary.error); // accepted above: cannot happen
    const structured = structuredSettingsOf(resolved.settings.custom_settings);
    const extracted = structured ? await extractStructured((m) => ask(m), lines, structured) : undefined;
    return {
      ...summary,
      provider: summaryAnswer.provider,
      ...(extracted ? { structuredData: extracted.data, structuredDataError: extracted.error } : {}),
    };
  }

  /** `call.analyzed` to the assistant's `webhook_url`, as the call's status events go. */
  async #emit(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    analysis: store.AnalysisRow,
    call: CallRow,
  ): Promise<void> {
    if (!call.assistantId) return;
    const urls = await assistantEventUrls(tx, tenant, call.assistantId);
    if (!urls?.webhookUrl) return;
    await this.deps.webhooks.emit({ tx, jobs }, tenant, {
      url: urls.webhookUrl,
      type: CALL_ANALYZED_EVENT_TYPE,
      data: analysisEventData(analysis, call),
    });
  }
}
