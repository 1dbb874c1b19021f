/**
 * The SIP agent's figures on `/metrics` (issue 21): calls by direction and how they ended, failures by
 * SIP status, and per call the RTP loss and jitter of the trunk's audio as histograms (a gauge per
 * call would need a call id label). Labels are closed sets: direction, status class, outcome.
 */
import { Counter, Histogram, type Registry } from 'prom-client';

export type SipDirection = 'inbound' | 'outbound';

export class SipMetrics {
  readonly #calls: Counter<'direction' | 'outcome'>;
  readonly #failures: Counter<'direction' | 'status'>;
  readonly #loss: Histogram;
  readonly #jitter: Histogram;
  readonly #refused: Counter<'reason'>;
  readonly #transfers: Counter<'method' | 'outcome'>;
  /** How many malformed messages the transport has counted, read when /metrics is scraped. */
  #readMalformed: () => number = () => 0;
  #malformedSeen = 0;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#calls = new Counter({
      name: 'switchboard_sip_calls_total',
      help: 'SIP trunk calls by direction and outcome (answered, or the status they failed with).',
      labelNames: ['direction', 'outcome'],
      registers,
    });
    this.#failures = new Counter({
      name: 'switchboard_sip_call_failures_total',
      help: 'SIP trunk calls that ended before an answer, by the final SIP status (408 for a timeout).',
      labelNames: ['direction', 'status'],
      registers,
    });
    this.#loss = new Histogram({
      name: 'switchboard_sip_rtp_loss_ratio',
      help: 'Per call: the share of the trunk’s RTP packets that never arrived.',
      buckets: [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1],
      registers,
    });
    this.#jitter = new Histogram({
      name: 'switchboard_sip_rtp_jitter_seconds',
      help: 'Per call: the interarrival jitter of the trunk’s RTP at the call’s end (RFC 3550).',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16],
      registers,
    });
    this.#refused = new Counter({
      name: 'switchboard_sip_inbound_refused_total',
      help: 'Inbound INVITEs refused, by reason (unknown number, not from the trunk, bad credentials…).',
      labelNames: ['reason'],
      registers,
    });
    this.#transfers = new Counter({
      name: 'switchboard_sip_transfers_total',
      help: 'SIP call transfers by method (refer, or bridge when the trunk takes no REFER) and outcome.',
      labelNames: ['method', 'outcome'],
      registers,
    });
    const metrics = this;
    new Counter({
      name: 'switchboard_sip_malformed_messages_total',
      help: 'SIP messages that could not be parsed (dropped, or answered 400).',
      registers,
      // The transport counts them; the counter catches up with it whenever it is read.
      collect() {
        const now = metrics.#readMalformed();
        if (now > metrics.#malformedSeen) this.inc(now - metrics.#malformedSeen);
        metrics.#malformedSeen = Math.max(now, metrics.#malformedSeen);
      },
    });
  }

  answered(direction: SipDirection): void {
    this.#calls.inc({ direction, outcome: 'answered' });
  }

  failed(direction: SipDirection, status: number): void {
    this.#calls.inc({ direction, outcome: 'failed' });
    this.#failures.inc({ direction, status: String(status) });
  }

  /** A call's media ended: its loss and jitter as heard from the trunk. */
  media(stats: { packetsReceived: number; packetsLost: number; jitterMs: number }): void {
    const expected = stats.packetsReceived + stats.packetsLost;
    if (expected > 0) this.#loss.observe(stats.packetsLost / expected);
    if (stats.packetsReceived > 1) this.#jitter.observe(stats.jitterMs / 1000);
  }

  /** A transfer finished: moved (`done`) or not (`failed`). */
  transferred(method: 'refer' | 'bridge', done: boolean): void {
    this.#transfers.inc({ method, outcome: done ? 'done' : 'failed' });
  }

  refused(reason: string): void {
    this.#refused.inc({ reason });
  }

  /** Where the malformed-message count comes from (the agent's transport). */
  countMalformed(read: () => number): void {
    this.#readMalformed = read;
  }
}
