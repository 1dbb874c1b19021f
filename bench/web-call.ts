/**
 * `npm run bench -- web-call [--steps 1,10]`: N concurrent web calls (a browser on the /web-call
 * stream, 16-bit PCM at 16 kHz) against the same N phone calls through carrier_a's media stream
 * (μ-law, 8 kHz), in the same run, on the same simulators in a process of their own (voice-sims.ts:
 * the browsers are the simulated phone on the web call wire). Every call says the same thing: the
 * greeting heard to its end, one question, its answer heard to its end, hang up.
 *
 * Figures per path and N: the platform-added time of each reply turn as stored (`platform_ms`:
 * end-to-end minus the endpointing wait, model TTFT and voice TTFB) p50/p95, end-to-end p95, and the
 * platform process's CPU per call (CPU seconds over call seconds, % of one core). The last line:
 * web against carrier_a at the largest N, as ratios.
 */
import { benchVoiceAssistant, startVoiceSims } from './fixtures/voice-sims-process.js';
import { benchUser, expectOk, percentile, startBenchPlatform, table } from './support.js';

const NUMBER = '+14155550117';
const WARM_UP_CALLS = 2;

type Path = 'carrier_a' | 'web';

interface StepResult {
  path: Path;
  n: number;
  failed: number;
  replyTurns: number;
  platform: { p50: number; p95: number };
  endToEndP95: number;
  cpuPercentPerCall: number;
  seconds: number;
}

interface TurnRow {
  kind: string;
  end_to_end_ms: number | null;
  platform_ms: number | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const p = (values: number[], q: number) => (values.length === 0 ? Number.NaN : percentile(values, q));
const ms = (value: number) => (Number.isFinite(value) ? Number(value.toFixed(1)) : '—');
const ratio = (value: number, base: number) => (base >= 0.5 ? `${(value / base).toFixed(2)}×` : 'n/a');

export async function run(args: string[] = []): Promise<void> {
  const stepsAt = args.indexOf('--steps');
  const steps = (stepsAt >= 0 ? args[stepsAt + 1]! : '1,10').split(',').map(Number);
  const sims = await startVoiceSims(['carrier_a', 'talk']);
  const bench = await startBenchPlatform(sims.vendors.env);
  const { app } = bench.platform;
  try {
    const { headers } = await benchUser(bench.platform, 'web-call');
    const { vendors } = sims;
    const assistantId = await benchVoiceAssistant(app, headers, vendors, 'Web bench');
    expectOk(
      await app.inject({
        method: 'POST',
        url: '/api/v1/phone-numbers',
        headers,
        payload: { phone_number: NUMBER, provider: 'carrier_a', assistant_id: assistantId },
      }),
      'number',
    );

    let serial = 0;
    /** Starts one call on `path`, waits for its phone or browser to finish; the report and call id. */
    const oneCall = async (path: Path) => {
      serial += 1;
      if (path === 'carrier_a') {
        const initiated = expectOk(
          await app.inject({
            method: 'POST',
            url: '/calls/initiate',
            headers,
            payload: {
              from_phone_number: NUMBER,
              to_phone_number: `+1415888${String(serial).padStart(4, '0')}`,
            },
          }),
          'initiate',
        ).json() as { call_id: number; call_sid: string };
        return { report: await sims.phoneReport(initiated.call_sid), callId: initiated.call_id };
      }
      const created = expectOk(
        await app.inject({
          method: 'POST',
          url: '/api/v1/calls/web',
          headers,
          payload: { assistant_id: assistantId },
        }),
        'web call',
      ).json() as { call: { id: number }; socket_url: string; token: string };
      const callSid = `web-bench-${created.call.id}`;
      const report = sims.phoneReport(callSid);
      sims.webCall(callSid, created.socket_url, created.token);
      return { report: await report, callId: created.call.id };
    };
    const read = async <T>(path: string): Promise<T> =>
      expectOk(await app.inject({ method: 'GET', url: `/api/v1/calls/${path}`, headers }), path).json() as T;
    const turnsOf = async (callId: number) => {
      const deadline = Date.now() + 20_000;
      let status = '';
      while (Date.now() < deadline) {
        status = (await read<{ status: string }>(String(callId))).status;
        if (['completed', 'failed', 'no-answer'].includes(status)) break;
        await sleep(200);
      }
      await sleep(300);
      return { status, turns: await read<TurnRow[]>(`${callId}/turns`) };
    };

    const runStep = async (path: Path, n: number): Promise<StepResult> => {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const placed = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          // Spread over up to 3 s, as real calls do not all connect in the same millisecond.
          await sleep(n > 1 ? (i * Math.min(3000, n * 30)) / n : 0);
          return oneCall(path);
        }),
      );
      const cpu = process.cpuUsage(cpuBefore);
      const seconds = (performance.now() - started) / 1000;
      const records = await Promise.all(placed.map(({ callId }) => turnsOf(callId)));
      const replies = records.flatMap((r) => r.turns.filter((t) => t.kind === 'reply'));
      const numbers = (values: Array<number | null>) => values.filter((v): v is number => v !== null);
      const platform = numbers(replies.map((t) => t.platform_ms));
      const callSeconds = placed.reduce((sum, { report }) => sum + report.durationMs / 1000, 0);
      for (const { report } of placed.filter(({ report }) => report.error).slice(0, 3))
        console.log(`  ${path} call ${report.callSid}: ${report.error}`);
      return {
        path,
        n,
        failed: placed.filter(
          ({ report }, i) => report.error || report.errors.length > 0 || records[i]!.status !== 'completed',
        ).length,
        replyTurns: replies.length,
        platform: { p50: p(platform, 50), p95: p(platform, 95) },
        endToEndP95: p(numbers(replies.map((t) => t.end_to_end_ms)), 95),
        cpuPercentPerCall: ((cpu.user + cpu.system) / 1e6 / callSeconds) * 100,
        seconds,
      };
    };

    const results: StepResult[] = [];
    for (const path of ['carrier_a', 'web'] as const) {
      console.log(`${path}: warm-up, ${WARM_UP_CALLS} calls…`);
      await runStep(path, WARM_UP_CALLS);
    }
    for (const n of steps) {
      // Both paths at each N, one after the other, so they see the same machine.
      for (const path of ['carrier_a', 'web'] as const) {
        const result = await runStep(path, n);
        results.push(result);
        console.log(
          `${path} N=${n}: platform-added p95 ${ms(result.platform.p95)} ms, ${result.failed} failed, ${result.seconds.toFixed(0)} s`,
        );
      }
    }
    table(
      results.map((r) => ({
        path: r.path === 'web' ? 'web (PCM 16 kHz)' : 'carrier_a (μ-law 8 kHz)',
        N: r.n,
        'failed calls': r.failed,
        'reply turns': r.replyTurns,
        'platform-added p50 ms': ms(r.platform.p50),
        'platform-added p95 ms': ms(r.platform.p95),
        'end-to-end p95 ms': ms(r.endToEndP95),
        'CPU % of a core per call': Number(r.cpuPercentPerCall.toFixed(2)),
      })),
    );
    const top = Math.max(...steps);
    const web = results.find((r) => r.path === 'web' && r.n === top)!;
    const phone = results.find((r) => r.path === 'carrier_a' && r.n === top)!;
    console.log(
      'platform-added = the stored platform_ms of each reply turn; CPU % is the platform process only (the simulators and browsers run in another).',
    );
    console.log(
      `web-call at N=${top}: platform-added p95 ${ms(web.platform.p95)} ms vs carrier_a ${ms(phone.platform.p95)} ms = ` +
        `${ratio(web.platform.p95, phone.platform.p95)}; CPU per call ${web.cpuPercentPerCall.toFixed(2)} % vs ` +
        `${phone.cpuPercentPerCall.toFixed(2)} % = ${ratio(web.cpuPercentPerCall, phone.cpuPercentPerCall)}; ` +
        `failed ${web.failed} + ${phone.failed}`,
    );
  } finally {
    await bench.close();
    await sims.stop();
  }
}
