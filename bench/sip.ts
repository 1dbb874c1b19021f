import { loadavg } from 'node:os';
import { and, eq, gt, max } from 'drizzle-orm';
import { calls } from '../src/db/schema/index.js';
import { startSipp } from '../test/support/sipp.js';
import { benchVoiceAssistant, startVoiceSims } from './fixtures/voice-sims-process.js';
import { benchUser, expectOk, percentile, startBenchPlatform, table } from './support.js';

const CARRIER_NUMBER = '+14155550117';
const SIP_NUMBER = '+16285550021';
/** Calls of each path before the steps (not reported): code paths compiled, pools opened. */
const WARM_UP_CALLS = 2;
/** How long the platform is watched with no call, for its idle CPU. */
const IDLE_MS = 5000;
const FINAL = ['completed', 'failed', 'busy', 'no-answer', 'canceled'];

type Path = 'sip' | 'carrier_a';

interface TurnRow {
  kind: string;
  end_to_end_ms: number | null;
  platform_ms: number | null;
}

interface CallRow {
  status: string;
  started_at: string | null;
  ended_at: string | null;
}

interface StepResult {
  path: Path;
  n: number;
  completed: number;
  replyTurns: number;
  platform: { p50: number; p95: number };
  endToEnd: { p50: number; p95: number };
  cpuPercentPerCall: number;
  /** The same, less what the platform spends with no call at all (measured before the steps). */
  netCpuPercentPerCall: number;
  cpuPercentTotal: number;
  simsCpuPercent: number;
  seconds: number;
  load: number;
  note: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const figures = (values: number[]) =>
  values.length === 0
    ? { p50: Number.NaN, p95: Number.NaN }
    : { p50: percentile(values, 50), p95: percentile(values, 95) };
const ms = (value: number) => (Number.isFinite(value) ? Number(value.toFixed(1)) : '—');
/** SIP ÷ carrier; a carrier figure under 0.5 (ms or %) gives no ratio. */
const ratio = (sip: number, carrier: number) =>
  Number.isFinite(sip) && carrier >= 0.5 ? `${(sip / carrier).toFixed(2)}×` : '—';

/**
 * A ratio of latencies with its difference: `platform_ms` is stored in whole milliseconds, so at 1–2 ms
 * a ratio of 2× or 0.5× is one millisecond of rounding — the difference says so.
 */
const ratioMs = (sip: number, carrier: number) => {
  if (!Number.isFinite(sip) || !Number.isFinite(carrier)) return '—';
  const difference = sip - carrier;
  return `${ratio(sip, carrier)} (${difference >= 0 ? '+' : '−'}${Math.abs(difference).toFixed(0)} ms)`;
};

function argument(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

export async function run(args: string[] = []): Promise<void> {
  const steps = (argument(args, '--steps') ?? '1,10,25').split(',').map(Number);

  // The simulators' process: the carriers' phones (each reports when its script ends) and the vendors.
  const sims = await startVoiceSims(['carrier_a', 'talk']);
  const { vendors, phoneReport } = sims;
  const simsCpu = sims.cpu;

  const bench = await startBenchPlatform({
    ...vendors.env,
    SIP_HOST: '127.0.0.1',
    SIP_PORT: '0',
    SIP_PUBLIC_HOST: '127.0.0.1',
    RTP_PORT_MIN: '41000',
    RTP_PORT_MAX: '41999',
  });
  const { app, database } = bench.platform;
  try {
    const agent = await bench.platform.startSip();
    const agentAddress = `127.0.0.1:${agent.address.port}`;
    const { headers } = await benchUser(bench.platform, 'sip');
    const assistantId = await benchVoiceAssistant(app, headers, vendors, 'SIP bench', {
      // The trunk is sipp on loopback: its address is the only one whose INVITEs are answered.
      sip_trunk_config: { sip_domain: '127.0.0.1', port: 5060, transport: 'udp', inbound_enabled: true },
    });
    for (const [number, provider] of [
      [CARRIER_NUMBER, 'carrier_a'],
      [SIP_NUMBER, 'sip_trunk'],
    ])
      expectOk(
        await app.inject({
          method: 'POST',
          url: '/api/v1/phone-numbers',
          headers,
          payload: { phone_number: number, provider, assistant_id: assistantId },
        }),
        `${provider} number`,
      );

    const read = async <T>(path: string): Promise<T> =>
      expectOk(await app.inject({ method: 'GET', url: `/api/v1/calls/${path}`, headers }), path).json() as T;
    /** The call once final, and its turns once they stop changing (written in the background). */
    const recordOf = async (callId: number): Promise<{ call: CallRow; turns: TurnRow[] }> => {
      const deadline = Date.now() + 30_000;
      let call = await read<CallRow>(String(callId));
      let last = '';
      while (Date.now() < deadline) {
        call = await read<CallRow>(String(callId));
        const turns = JSON.stringify(await read<TurnRow[]>(`${callId}/turns`));
        if (FINAL.includes(call.status) && turns === last) break;
        last = turns;
        await sleep(300);
      }
      return { call, turns: JSON.parse(last || '[]') as TurnRow[] };
    };
    const lastCallId = async () => (await database.db.select({ id: max(calls.id) }).from(calls))[0]?.id ?? 0;

    let serial = 0;
    /** N carrier calls started over one second (as sipp's `-r N` starts its N); their call ids. */
    const carrierCalls = async (n: number): Promise<{ ids: number[]; note: string }> => {
      const reports = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          await sleep((i * 1000) / n);
          serial += 1;
          const initiated = expectOk(
            await app.inject({
              method: 'POST',
              url: '/calls/initiate',
              headers,
              payload: {
                from_phone_number: CARRIER_NUMBER,
                to_phone_number: `+1415888${String(serial).padStart(4, '0')}`,
              },
            }),
            'initiate',
          ).json() as { call_id: number; call_sid: string };
          return { id: initiated.call_id, report: await phoneReport(initiated.call_sid) };
        }),
      );
      const errors = reports.flatMap(({ report }) => (report.error ? [report.error] : []));
      return { ids: reports.map(({ id }) => id), note: errors.slice(0, 2).join('; ') };
    };
    /** N sipp calls into the agent at once; the inbound calls recorded meanwhile. */
    const sipCalls = async (n: number): Promise<{ ids: number[]; note: string }> => {
      const before = await lastCallId();
      const sipp = await startSipp({
        scenario: 'uac_call_and_talk.xml',
        remote: agentAddress,
        service: SIP_NUMBER,
        audio: 'book-appointment',
        calls: n,
        concurrent: n,
        rate: n,
        timeoutSeconds: 90,
      });
      const result = await sipp.done;
      const rows = await database.db
        .select({ id: calls.id })
        .from(calls)
        .where(and(gt(calls.id, before), eq(calls.direction, 'inbound')));
      const note = result.code === 0 ? '' : `sipp exit ${result.code}: ${result.errors.slice(0, 300)}`;
      return { ids: rows.map((row) => row.id).sort((a, b) => a - b), note };
    };

    /** CPU seconds a second this process spends with no call (workers' polls, timers). */
    let idleCpuRate = 0;
    const runStep = async (path: Path, n: number): Promise<StepResult> => {
      const cpuBefore = process.cpuUsage();
      const simsBefore = await simsCpu();
      const started = performance.now();
      const { ids, note } = await (path === 'sip' ? sipCalls(n) : carrierCalls(n));
      const cpu = process.cpuUsage(cpuBefore);
      const seconds = (performance.now() - started) / 1000;
      const simsAfter = await simsCpu();
      const load = loadavg()[0]!;
      const records = await Promise.all(ids.map(recordOf));
      const replies = records.flatMap((r) => r.turns.filter((t) => t.kind === 'reply'));
      const callSeconds = records.reduce((sum, { call }) => {
        if (!call.started_at || !call.ended_at) return sum;
        return sum + (Date.parse(call.ended_at) - Date.parse(call.started_at)) / 1000;
      }, 0);
      const cpuSeconds = (cpu.user + cpu.system) / 1e6;
      const numbers = (values: Array<number | null>) => values.filter((v): v is number => v !== null);
      return {
        path,
        n,
        completed: records.filter(({ call }) => call.status === 'completed').length,
        replyTurns: replies.length,
        platform: figures(numbers(replies.map((t) => t.platform_ms))),
        endToEnd: figures(numbers(replies.map((t) => t.end_to_end_ms))),
        cpuPercentPerCall: callSeconds > 0 ? (cpuSeconds / callSeconds) * 100 : Number.NaN,
        netCpuPercentPerCall:
          callSeconds > 0 ? ((cpuSeconds - idleCpuRate * seconds) / callSeconds) * 100 : Number.NaN,
        cpuPercentTotal: (cpuSeconds / seconds) * 100,
        simsCpuPercent: ((simsAfter - simsBefore) / seconds) * 100,
        seconds,
        load,
        note,
      };
    };

    console.log(
      `sip: warm-up, ${WARM_UP_CALLS} calls a path… (load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}, 2 cores shared)`,
    );
    await runStep('sip', WARM_UP_CALLS);
    await runStep('carrier_a', WARM_UP_CALLS);
    await sleep(2000);
    const idleBefore = process.cpuUsage();
    await sleep(IDLE_MS);
    const idle = process.cpuUsage(idleBefore);
    idleCpuRate = (idle.user + idle.system) / 1e6 / (IDLE_MS / 1000);
    console.log(`sip: the platform with no call spends ${(idleCpuRate * 100).toFixed(2)} % of a core`);
    const results: StepResult[] = [];
    for (const n of steps)
      for (const path of ['sip', 'carrier_a'] as const) {
        const result = await runStep(path, n);
        results.push(result);
        console.log(
          `${path} N=${n}: ${result.completed}/${n} completed, platform-added p95 ${ms(result.platform.p95)} ms, ` +
            `${result.seconds.toFixed(0)} s, load ${result.load.toFixed(2)}${result.note ? ` — ${result.note}` : ''}`,
        );
      }

    console.log('\nPer path and step:');
    table(
      results.map((r) => ({
        path: r.path,
        N: r.n,
        completed: `${r.completed}/${r.n}`,
        'reply turns': r.replyTurns,
        'platform-added p50 ms': ms(r.platform.p50),
        'platform-added p95 ms': ms(r.platform.p95),
        'end-to-end p50 ms': ms(r.endToEnd.p50),
        'end-to-end p95 ms': ms(r.endToEnd.p95),
        'CPU % of a core per call': Number(r.cpuPercentPerCall.toFixed(2)),
        'less idle': Number(r.netCpuPercentPerCall.toFixed(2)),
        'CPU % total': Number(r.cpuPercentTotal.toFixed(0)),
        'simulators CPU %': Number(r.simsCpuPercent.toFixed(0)),
        'load avg 1m': Number(r.load.toFixed(2)),
      })),
    );
    console.log('\nSIP ÷ carrier_a, same N, same run:');
    const pairs = steps.map((n) => ({
      n,
      sip: results.find((r) => r.path === 'sip' && r.n === n)!,
      carrier: results.find((r) => r.path === 'carrier_a' && r.n === n)!,
    }));
    table(
      pairs.map(({ n, sip, carrier }) => ({
        N: n,
        completed: `${sip.completed} vs ${carrier.completed}`,
        'platform-added p50': ratioMs(sip.platform.p50, carrier.platform.p50),
        'platform-added p95': ratioMs(sip.platform.p95, carrier.platform.p95),
        'end-to-end p50': ratioMs(sip.endToEnd.p50, carrier.endToEnd.p50),
        'end-to-end p95': ratioMs(sip.endToEnd.p95, carrier.endToEnd.p95),
        'CPU per call': ratio(sip.cpuPercentPerCall, carrier.cpuPercentPerCall),
        'CPU per call less idle': ratio(sip.netCpuPercentPerCall, carrier.netCpuPercentPerCall),
      })),
    );
    const top = pairs.at(-1)!;
    console.log(
      `sip at N=${top.n}: ${top.sip.completed}/${top.n} completed, platform-added p95 ${ms(top.sip.platform.p95)} ms = ` +
        `${ratioMs(top.sip.platform.p95, top.carrier.platform.p95)} carrier_a (${ms(top.carrier.platform.p95)} ms), ` +
        `end-to-end p95 ${ms(top.sip.endToEnd.p95)} ms = ${ratioMs(top.sip.endToEnd.p95, top.carrier.endToEnd.p95)}, ` +
        `CPU ${top.sip.cpuPercentPerCall.toFixed(2)} % of a core per call = ` +
        `${ratio(top.sip.cpuPercentPerCall, top.carrier.cpuPercentPerCall)} carrier_a (${top.carrier.cpuPercentPerCall.toFixed(2)} %); ` +
        `less idle ${top.sip.netCpuPercentPerCall.toFixed(2)} % = ${ratio(top.sip.netCpuPercentPerCall, top.carrier.netCpuPercentPerCall)}`,
    );
    console.log(
      'platform-added = the stored platform_ms of each reply turn (whole ms: end-to-end − endpointing wait − ' +
        'model TTFT − voice TTFB, each as the turn measured it); CPU % are of one core, this process only (every ' +
        "thread), divided by the calls' seconds (started_at → ended_at); 'less idle' first takes off what the " +
        'platform spends with no call; sipp and the simulators run in other processes (simulators CPU %: the ' +
        'stt/model/voice simulators, and on the carrier path also its phones).',
    );
  } finally {
    await bench.close();
    await sims.stop();
  }
}
