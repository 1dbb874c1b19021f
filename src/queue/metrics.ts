/**
 * What each process's job workers did, for `GET /metrics`: runs per job and outcome, and how long a
 * run took. Per process, like every Prometheus figure, so a cluster's operators (and the cluster
 * benchmark) see how the work spreads over its processes.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { JobName } from './jobs.js';

export type JobOutcome = 'completed' | 'failed';

/** Told of every job run that ended in this process. */
export type JobObserver = (name: JobName, outcome: JobOutcome, seconds: number) => void;

export function jobMetrics(registry: Registry): JobObserver {
  const runs = new Counter({
    name: 'switchboard_jobs_total',
    help: 'Background job runs ended in this process, by job and outcome (a failed run is retried per its policy).',
    labelNames: ['job', 'outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'switchboard_job_duration_seconds',
    help: 'Time a background job run took in this process, by job.',
    labelNames: ['job'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300],
    registers: [registry],
  });
  return (name, outcome, seconds) => {
    runs.inc({ job: name, outcome });
    duration.observe({ job: name }, seconds);
  };
}
