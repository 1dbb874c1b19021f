/**
 * Two processes on one database: the SMS queue's drain and a call campaign, each run by one and then
 * by two server processes (`src/server.ts`, as `npm start` runs it) on the same PostgreSQL database,
 * behind one public address (test/support/balancer.ts: the carrier's callbacks and the API requests
 * go round-robin to the processes). The carrier_a simulator runs in a process of its own and answers
 * every call at once. Each round gets a fresh database; the figure is the two-process rate over the
 * one-process rate of the same run.
 *
 *   BENCH_DATABASE_URL=postgres://… npm run bench -- cluster [messages=3000] [contacts=2000] [--server-cpu=0.25] [--in-flight=40] [--rounds=1] [--warm-up=500]
 *
 * `--server-cpu=C` gives each server process a quota of C cores (fixtures/cpu-quota.ts: a control
 * group of its own), so that on a small machine the servers are what runs out rather than the cores
 * PostgreSQL, the simulator and the load share with them: the ratio then says what a second process
 * adds when each has CPU of its own, which the unlimited run on a 2-core machine cannot show. With
 * slower servers each attempt takes longer, so more must be in flight (`--in-flight=200`: above a
 * campaign's limit of 100, the contacts are shared among several campaigns run at once) for the
 * servers' CPU, not the concurrency, to be the limit. `--rounds=R` runs the pair (one process, then
 * two) R times, each pair with its own ratio. The table also shows the job runs each server ended in
 * each part (its `switchboard_jobs_total`), which is how the work spread over the processes.
 *
 * Before each timed part, `--warm-up=N` messages and N contacts go through the same servers untimed:
 * what is measured is the servers' steady state, not the first seconds in which each process compiles
 * its code and fills its caches — a cost paid once per process, so twice by two, which a short run
 * would otherwise count as the cluster's (measured: one process drained 47 msg/s cold, 64 warm).
 *
 * The embedded database is opened by one process at a time, so this benchmark needs a server.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { openDatabase } from '../src/db/client.js';
import { applyToWallet } from '../src/domains/billing/store.js';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { type Balancer, startBalancer } from '../test/support/balancer.js';
import {
  freePort,
  type ServerProcess,
  serverRequest,
  spawnServer,
  waitHealthy,
} from '../test/support/server-process.js';
import { adminQuery } from '../test/support/template.js';
import { startCarrierA } from './fixtures/carrier-a-process.js';
import { type CpuQuota, limitCpu } from './fixtures/cpu-quota.js';
import { table, timed } from './support.js';

const SECRET = 'benchmark-secret-key-0123456789abcdefghijklmnop';
/** Ten numbers of 100 messages a second: a ceiling (1,000/s) above what one process drains. */
const NUMBERS = 10;
const RATE = 100;
/** Attempts in flight for the organization, unless `--in-flight=N` says (above 100: several campaigns). */
const IN_FLIGHT = 40;
/** Messages and contacts sent through each round's servers before they are timed. */
const WARM_UP = 500;
/** How long the baseline's reads run. */
const READ_SECONDS = 10;
/** A campaign's own `concurrency_limit` is at most 100. */
const MAX_CAMPAIGN_CONCURRENCY = 100;
/** Where the contacts' numbers start: the warm-up's, then the timed campaign's (+1415 3000000…). */
const WARM_UP_CONTACTS = 2_000_000;
const TIMED_CONTACTS = 3_000_000;
const ACCOUNT = { account_sid: `AC${'c'.repeat(32)}`, auth_token: 'cluster-bench-token' };

interface Round {
  processes: number;
  /** The baseline: authenticated one-row reads a second. */
  readsPerSecond: number;
  smsPerSecond: number;
  executionsPerSecond: number;
  /** CPU seconds each server process used, and the simulator's. */
  serverCpu: number[];
  simCpu: number;
  /** How many of the machine's cores were busy (anything: servers, PostgreSQL, simulator, balancer). */
  busyCores: { sms: number; campaign: number };
  /** How many cores each server process used during each part. */
  serverCores: { sms: number[]; campaign: number[] };
  /** Job runs each server process ended during each part, and of them the campaign's attempts. */
  jobRuns: { sms: number[]; campaign: number[]; attempts: number[] };
}

export async function run(args: string[]): Promise<void> {
  const adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    console.error(
      'npm run bench -- cluster needs BENCH_DATABASE_URL (a PostgreSQL server): the embedded database is opened by one process at a time.',
    );
    process.exit(2);
  }
  const flag = (name: string) => {
    const arg = args.find((a) => a.startsWith(`--${name}=`));
    return arg === undefined ? undefined : Number(arg.slice(name.length + 3));
  };
  const serverCpu = flag('server-cpu');
  const inFlight = flag('in-flight') ?? IN_FLIGHT;
  const [messagesArg, contactsArg] = args.filter((arg) => !arg.startsWith('--'));
  const messages = Number(messagesArg ?? 3000);
  const contacts = Number(contactsArg ?? 2000);
  const pairs = flag('rounds') ?? 1;
  const warmUp = flag('warm-up') ?? WARM_UP;
  const rounds: Round[] = [];
  // One process then two, `--rounds` times: each pair's ratio is of rounds run minutes apart, so a
  // machine whose speed drifts over the run (a shared host) moves both sides of a ratio alike.
  for (let pair = 0; pair < pairs; pair++)
    for (const processes of [1, 2])
      rounds.push(await runRound(adminUrl, processes, messages, contacts, { serverCpu, inFlight, warmUp }));

  console.log(
    `\nCluster: ${messages} SMS over ${NUMBERS} numbers × ${RATE}/s, ${Math.ceil(inFlight / MAX_CAMPAIGN_CONCURRENCY)} campaign(s) of ${contacts} contacts in all (${inFlight} in flight), PostgreSQL server${serverCpu ? `, each server limited to ${serverCpu} of a core` : ''}`,
  );
  table(
    rounds.map((round) => ({
      processes: round.processes,
      'one-row reads/s (baseline)': round.readsPerSecond.toFixed(0),
      'SMS queued → at the carrier, msg/s': round.smsPerSecond.toFixed(0),
      'campaign executions/s': round.executionsPerSecond.toFixed(1),
      'server CPU s (each)': round.serverCpu.map((s) => s.toFixed(1)).join(' + '),
      'simulator CPU s': round.simCpu.toFixed(1),
      'servers’ cores (each): SMS · campaign': `${cores(round.serverCores.sms)} · ${cores(round.serverCores.campaign)}`,
      [`machine cores busy (of ${cpus().length}): SMS · campaign`]: `${round.busyCores.sms.toFixed(2)} · ${round.busyCores.campaign.toFixed(2)}`,
      'job runs (each): SMS · campaign (attempts)': `${round.jobRuns.sms.join(' + ')} · ${round.jobRuns.campaign.join(' + ')} (${round.jobRuns.attempts.join(' + ')})`,
    })),
  );
  for (let pair = 0; pair < pairs; pair++) {
    const [one, two] = rounds.slice(pair * 2, pair * 2 + 2) as [Round, Round];
    console.log(
      `cluster${pairs > 1 ? ` (pair ${pair + 1})` : ''}: two processes answer the one-row read ${(two.readsPerSecond / one.readsPerSecond).toFixed(2)}× (baseline), drain SMS ${(two.smsPerSecond / one.smsPerSecond).toFixed(2)}× and run the campaign ${(two.executionsPerSecond / one.executionsPerSecond).toFixed(2)}× one process`,
    );
  }
}

/** Job runs a server process has ended so far, by job (its `switchboard_jobs_total`, queue/metrics.ts). */
async function jobRunsOf(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const runs = new Map<string, number>();
  for (const [, job, count] of text.matchAll(/^switchboard_jobs_total\{job="([^"]+)"[^}]*\} (\d+)/gm))
    runs.set(job!, (runs.get(job!) ?? 0) + Number(count));
  return runs;
}

/** Job runs per server since `before`: all jobs, or one job's. */
function runsSince(before: Map<string, number>[], after: Map<string, number>[], job?: string): number[] {
  const total = (runs: Map<string, number>) =>
    job === undefined ? [...runs.values()].reduce((sum, n) => sum + n, 0) : (runs.get(job) ?? 0);
  return after.map((runs, i) => total(runs) - total(before[i]!));
}

async function runRound(
  adminUrl: string,
  processes: number,
  messages: number,
  contacts: number,
  { serverCpu, inFlight, warmUp }: { serverCpu: number | undefined; inFlight: number; warmUp: number },
): Promise<Round> {
  const name = `switchboard_cluster_${process.pid}_${processes}`;
  await adminQuery(adminUrl, `drop database if exists "${name}" with (force)`);
  await adminQuery(adminUrl, `create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchboard-cluster-'));
  const sim = await startCarrierA(1);
  await sim.addAccount(ACCOUNT);
  const ports = await Promise.all(Array.from({ length: processes }, () => freePort()));
  const balancer = await startBalancer(ports.map((port) => `http://127.0.0.1:${port}`));
  const servers: ServerProcess[] = [];
  const quotas: CpuQuota[] = [];
  try {
    // One after the other: the first applies the migrations.
    for (const port of ports) {
      const server = spawnServer({
        DATA_DIR: dataDir,
        DATABASE_URL: url.toString(),
        PORT: String(port),
        PUBLIC_URL: balancer.url,
        SECRET_KEY: SECRET,
        CARRIER_A_BASE_URL: sim.baseUrl,
        CAMPAIGN_ORGANIZATION_CONCURRENCY: String(inFlight),
      });
      servers.push(server);
      if (serverCpu !== undefined && server.child.pid !== undefined)
        quotas.push(limitCpu(server.child.pid, serverCpu, `switchboard-bench-${server.child.pid}`));
      await waitHealthy(server, 60_000);
    }
    const api = apiOf(balancer);
    const token = await signUp(api, url.toString());
    const from = await setUp(api, token);

    // Warm-up, untimed: each server's code compiled and caches filled before it is measured.
    if (warmUp > 0) {
      await sendSms(api, token, from, warmUp);
      while ((await sim.state()).messages < warmUp) await sleep(50);
    }

    // The baseline: an authenticated one-row read, which shares nothing between the processes but
    // the database — what a second process adds on this machine when the engines' own coordination
    // costs nothing. Machines differ in that (cores that slow each other down, caches shared with
    // PostgreSQL), so the engines' ratios are read beside this one.
    const readsPerSecond = await readFor(api, token, `/api/v1/phone-numbers/${from.numberId}`, READ_SECONDS);

    // SMS: every message sent through the cluster, timed until the carrier has taken them all.
    const smsStarted = performance.now();
    const smsMachine = machineTicks();
    const serversAt = () => servers.map((server) => cpuSecondsOf(server.child.pid));
    const coresSince = (before: number[], seconds: number) =>
      serversAt().map((now, i) => (now - before[i]!) / seconds);
    const smsServers = serversAt();
    const jobsAt = () => Promise.all(ports.map((port) => jobRunsOf(port)));
    const smsJobs = await jobsAt();
    await sendSms(api, token, from, messages);
    while ((await sim.state()).messages < warmUp + messages) await sleep(50);
    const smsSeconds = (performance.now() - smsStarted) / 1000;
    const smsBusy = busyCoresSince(smsMachine);
    const smsServerCores = coresSince(smsServers, smsSeconds);
    const smsJobsAfter = await jobsAt();

    // The campaign: one, or several of at most 100 in flight each (a campaign's own limit) when
    // more must be in flight, the contacts shared among them; timed until every one has completed.
    // The warm-up's contacts are called first, untimed, by campaigns of their own.
    if (warmUp > 0) {
      const warmUpIds = await createCampaigns(
        api,
        token,
        from.assistantId,
        warmUp,
        inFlight,
        WARM_UP_CONTACTS,
      );
      await sim.settle();
      await runCampaigns(api, token, warmUpIds);
    }
    const campaignIds = await createCampaigns(
      api,
      token,
      from.assistantId,
      contacts,
      inFlight,
      TIMED_CONTACTS,
    );
    await sim.settle();
    const campaignStarted = performance.now();
    const campaignMachine = machineTicks();
    const campaignServers = serversAt();
    const campaignJobs = await jobsAt();
    await runCampaigns(api, token, campaignIds);
    const campaignSeconds = (performance.now() - campaignStarted) / 1000;
    const campaignBusy = busyCoresSince(campaignMachine);
    const campaignServerCores = coresSince(campaignServers, campaignSeconds);
    const campaignJobsAfter = await jobsAt();
    const simState = await sim.state();
    return {
      processes,
      readsPerSecond,
      smsPerSecond: messages / smsSeconds,
      executionsPerSecond: contacts / campaignSeconds,
      serverCpu: servers.map((server) => cpuSecondsOf(server.child.pid)),
      simCpu: simState.cpuSeconds,
      busyCores: { sms: smsBusy, campaign: campaignBusy },
      serverCores: { sms: smsServerCores, campaign: campaignServerCores },
      jobRuns: {
        sms: runsSince(smsJobs, smsJobsAfter),
        campaign: runsSince(campaignJobs, campaignJobsAfter),
        attempts: runsSince(campaignJobs, campaignJobsAfter, 'campaign.attempt'),
      },
    };
  } finally {
    for (const server of servers) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    for (const quota of quotas) await quota.release();
    await balancer.close();
    await sim.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await adminQuery(adminUrl, `drop database if exists "${name}" with (force)`);
  }
}

/**
 * Campaigns calling `contacts` contacts (numbered from `firstNumber`) with `inFlight` attempts at a
 * time in all: one, or several of at most MAX_CAMPAIGN_CONCURRENCY each, the contacts shared.
 */
async function createCampaigns(
  api: Api,
  token: string,
  assistantId: number,
  contacts: number,
  inFlight: number,
  firstNumber: number,
): Promise<number[]> {
  const campaignCount = Math.ceil(inFlight / MAX_CAMPAIGN_CONCURRENCY);
  const ids: number[] = [];
  for (let c = 0; c < campaignCount; c++) {
    const campaign = (await api('POST', '/api/v1/campaigns', token, {
      name: `Cluster ${firstNumber}-${c + 1}`,
      campaign_type: 'call',
      assistant_id: assistantId,
      concurrency_limit: Math.ceil(inFlight / campaignCount),
    })) as { id: number };
    ids.push(campaign.id);
    const share = Math.ceil(contacts / campaignCount);
    const first = c * share;
    const count = Math.min(share, contacts - first);
    for (let start = 0; start < count; start += 5000) {
      await api('POST', `/api/v1/campaigns/${campaign.id}/contacts`, token, {
        contacts: Array.from({ length: Math.min(5000, count - start) }, (_, k) => ({
          phone_number: `+1415${String(firstNumber + first + start + k).padStart(7, '0')}`,
        })),
      });
    }
  }
  return ids;
}

/** Starts the campaigns and waits until every one has completed. */
async function runCampaigns(api: Api, token: string, ids: number[]): Promise<void> {
  for (const id of ids) await api('POST', `/api/v1/campaigns/${id}/start`, token);
  for (const id of ids) {
    for (;;) {
      const state = (await api('GET', `/api/v1/campaigns/${id}`, token)) as { status: string };
      if (state.status === 'completed') break;
      if (state.status !== 'running') throw new Error(`campaign ${state.status}`);
      await sleep(100);
    }
  }
}

/**
 * Authenticated GETs of `url`, 20 at a time for `seconds` (a time, not a count: support.ts `timed`
 * runs a count): how many a second were answered.
 */
async function readFor(api: Api, token: string, url: string, seconds: number): Promise<number> {
  const started = performance.now();
  const until = started + seconds * 1000;
  let answered = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (performance.now() < until) {
        await api('GET', url, token);
        answered++;
      }
    }),
  );
  return answered / ((performance.now() - started) / 1000);
}

/** Sends `count` messages through the cluster, 20 at a time, round the numbers. */
async function sendSms(api: Api, token: string, from: string[], count: number): Promise<void> {
  await timed(count, 20, (i) =>
    api('POST', '/sms/send', token, {
      from_phone_number: from[i % NUMBERS],
      to_phone_number: '+14155550199',
      message: `cluster ${i}`,
    }),
  );
}

/** Cores per process, `0.25 + 0.17`. */
function cores(each: number[]): string {
  return each.map((c) => c.toFixed(2)).join(' + ');
}

/** The machine's CPU time so far (Linux /proc/stat, all cores): busy and in all. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, ticks) => sum + ticks, 0);
  // idle and iowait are the 4th and 5th fields.
  return { busy: total - fields[3]! - fields[4]!, total };
}

/** How many cores were busy on average since `before`: 2.0 is a 2-core machine saturated. */
function busyCoresSince(before: { busy: number; total: number }): number {
  const now = machineTicks();
  return ((now.busy - before.busy) / (now.total - before.total)) * cpus().length;
}

type Api = (method: string, url: string, token?: string, body?: unknown) => Promise<unknown>;

/** JSON requests through the balancer; anything but a 2xx ends the benchmark with the answer. */
function apiOf(balancer: Balancer): Api {
  return async (method, url, token, body) => {
    const answer = await serverRequest({ baseUrl: balancer.url }, method, url, { token, body });
    if (answer.status >= 300)
      throw new Error(`${method} ${url}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
}

/** Registers, verifies and credits (straight in the database) and signs in: the bearer token. */
async function signUp(api: Api, databaseUrl: string): Promise<string> {
  const credentials = { email: 'cluster@example.test', password: 'benchmark password' };
  const registered = (await api('POST', '/api/v1/auth/register', undefined, {
    ...credentials,
    first_name: 'C',
    last_name: 'L',
  })) as { user: { id: number }; organization: { id: number } };
  const database = await openDatabase({ kind: 'server', url: databaseUrl, poolSize: 1 });
  try {
    await markEmailVerified(database.db, registered.user.id);
    // Enough for every call of the campaign (a campaign does not start without credit).
    await applyToWallet(database.db, {
      organizationId: registered.organization.id,
      amount: 100_000,
      kind: 'adjustment',
      description: 'bench credit',
      reference: null,
    });
  } finally {
    await database.close();
  }
  return ((await api('POST', '/api/v1/auth/login', undefined, credentials)) as { access_token: string })
    .access_token;
}

/**
 * The carrier account, an assistant, and the numbers it sends from (each at RATE a second); the
 * first number's id is what the baseline reads.
 */
async function setUp(api: Api, token: string): Promise<string[] & { assistantId: number; numberId: number }> {
  await api('PUT', '/api/v1/organization', token, { carrier_a: ACCOUNT });
  const assistant = (await api('POST', '/api/v1/assistants', token, { name: 'Cluster bench' })) as {
    id: number;
  };
  const numbers = Object.assign([] as string[], { assistantId: assistant.id, numberId: 0 });
  for (let i = 0; i < NUMBERS; i++) {
    const phone = `+1415666${String(1000 + i).padStart(4, '0')}`;
    const created = (await api('POST', '/api/v1/phone-numbers', token, {
      phone_number: phone,
      provider: 'carrier_a',
      assistant_id: assistant.id,
      sms_rate_per_second: RATE,
    })) as { id: number };
    if (i === 0) numbers.numberId = created.id;
    numbers.push(phone);
  }
  return numbers;
}

/** CPU seconds (user + system) a process has used, from /proc (Linux). */
function cpuSecondsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after "pid (comm) ".
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
