/**
 * Call analytics (GET /api/v1/calls/analytics): what an organization's calls added up to over a
 * range of days in a time zone — outcomes, durations, cost, transfers, tool use, interruptions and
 * per-turn latency percentiles, per day, per assistant and per number of ours. Read from the
 * rollups the calls domain keeps (rollups.ts), never from the calls themselves, so a year of a
 * million calls costs about what a month does.
 *
 * The range is whole hours (the rollups' grain): a date means the day in `time_zone`, a timestamp
 * its hour. In zones whose offset is not whole hours (Asia/Kolkata…) a day starts at the top of
 * the hour before local midnight.
 */
import { DateTime, IANAZone } from 'luxon';
import type { Db } from '../../db/client.js';
import { toE164 } from '../../lib/phone.js';
import { invalidField } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import {
  assistantNames,
  type Counters,
  countersByDay,
  figuresByGroup,
  type GroupFigures,
  type RollupRange,
  toolUse,
} from './analytics-store.js';
import {
  addHistogram,
  emptyHistogram,
  histogramCount,
  PERCENTILE_RELATIVE_ERROR,
  percentileOf,
} from './histogram.js';
import { HISTOGRAMS, type HistogramName, type LATENCIES } from './rollups.js';

export interface AnalyticsQuery {
  date_from?: string;
  date_to?: string;
  assistant_id?: number;
  phone_number?: string;
  time_zone?: string;
}

/** The longest range, in days of the time zone. */
export const MAX_RANGE_DAYS = 366;
/** Days in the default range, today included. */
export const DEFAULT_RANGE_DAYS = 30;
const HOUR_MS = 3_600_000;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** The figures of a set of rollup rows: counters and histograms added up. */
interface Figures extends Counters {
  histograms: Record<HistogramName, number[]>;
}

export class CallAnalytics {
  constructor(private readonly deps: { db: Db; now?: () => Date }) {}

  async report(principal: Principal, query: AnalyticsQuery) {
    const { tenant } = principal;
    const timeZone = query.time_zone ?? 'UTC';
    if (!IANAZone.isValidZone(timeZone))
      throw invalidField(['query', 'time_zone'], 'Not an IANA time zone (e.g. Europe/Paris)');
    let phoneNumber: string | undefined;
    if (query.phone_number !== undefined) {
      phoneNumber = toE164(query.phone_number);
      if (!phoneNumber)
        throw invalidField(['query', 'phone_number'], 'Not a valid E.164 phone number (e.g. +14155552671)');
    }
    const { from, to, days } = rangeOf(query, timeZone, this.deps.now?.() ?? new Date());
    const range: RollupRange = {
      from,
      to,
      ...(query.assistant_id !== undefined ? { assistantId: query.assistant_id } : {}),
      ...(phoneNumber !== undefined ? { phoneNumber } : {}),
    };
    const { db } = this.deps;
    const [groups, perDay, tools] = await Promise.all([
      figuresByGroup(db, tenant, range),
      countersByDay(db, tenant, range, timeZone, isUtcThroughout(timeZone, from, to)),
      toolUse(db, tenant, range),
    ]);
    const names = await assistantNames(
      db,
      tenant,
      [...new Set(groups.map((group) => group.assistantId))].filter((id) => id > 0),
    );

    const totals = sum(groups);
    const byAssistant = groupBy(groups, (group) => group.assistantId);
    const byNumber = groupBy(groups, (group) => group.phoneNumber);
    const dayFigures = new Map(perDay.map((day) => [day.date, day]));
    const percentiles = (name: (typeof LATENCIES)[number]) => {
      const counts = totals.histograms[name];
      return {
        turns: histogramCount(counts),
        p50: percentileOf(counts, 0.5),
        p90: percentileOf(counts, 0.9),
        p95: percentileOf(counts, 0.95),
        p99: percentileOf(counts, 0.99),
      };
    };
    const latency = {
      end_to_end_ms: percentiles('endToEndMs'),
      llm_ttft_ms: percentiles('llmTtftMs'),
      tts_ttfb_ms: percentiles('ttsTtfbMs'),
      stt_delay_ms: percentiles('sttDelayMs'),
      platform_ms: percentiles('platformMs'),
    };
    return {
      date_from: from.toISOString(),
      date_to: to.toISOString(),
      time_zone: timeZone,
      percentile_relative_error: round(PERCENTILE_RELATIVE_ERROR, 4),
      totals: headline(totals),
      per_day: days.map((date) => ({ date, ...dayView(dayFigures.get(date)) })),
      transfers: { count: totals.transfers, rate: ratio(totals.transfers, totals.calls) },
      tool_use: tools,
      interruptions: {
        count: totals.interruptedTurns,
        turns: totals.turns,
        rate: ratio(totals.interruptedTurns, totals.turns),
      },
      latency,
      by_assistant: [...byAssistant]
        .map(([assistantId, figures]) => ({
          assistant_id: assistantId > 0 ? assistantId : null,
          assistant_name: names.get(assistantId) ?? null,
          ...breakdown(figures),
        }))
        .sort((a, b) => b.calls - a.calls || (a.assistant_id ?? 0) - (b.assistant_id ?? 0)),
      by_number: [...byNumber]
        .map(([number, figures]) => ({ phone_number: number, ...breakdown(figures) }))
        .sort((a, b) => b.calls - a.calls || a.phone_number.localeCompare(b.phone_number)),
    };
  }
}

/**
 * The range as whole UTC hours [from, to) and the local dates it spans. Default: the last 30 days,
 * today included. 422 for a date that does not parse, an end before the start, or more than 366 days.
 */
export function rangeOf(
  query: Pick<AnalyticsQuery, 'date_from' | 'date_to'>,
  timeZone: string,
  now: Date,
): { from: Date; to: Date; days: string[] } {
  const today = DateTime.fromJSDate(now, { zone: timeZone }).startOf('day');
  const toInput = query.date_to === undefined ? undefined : parseBound('date_to', query.date_to, timeZone);
  // A date ends where the next day starts; a timestamp's hour is included.
  const end = toInput
    ? toInput.dateOnly
      ? toInput.at.plus({ days: 1 }).startOf('day')
      : toInput.at.startOf('hour').plus({ hours: 1 })
    : today.plus({ days: 1 });
  const fromInput =
    query.date_from === undefined ? undefined : parseBound('date_from', query.date_from, timeZone);
  const start = fromInput
    ? fromInput.at
    : end
        .minus({ milliseconds: 1 })
        .startOf('day')
        .minus({ days: DEFAULT_RANGE_DAYS - 1 });
  const from = new Date(Math.floor(start.toMillis() / HOUR_MS) * HOUR_MS);
  const to = new Date(Math.ceil(end.toMillis() / HOUR_MS) * HOUR_MS);
  if (from >= to) throw invalidField(['query', 'date_to'], 'date_to is before date_from');
  const first = DateTime.fromJSDate(from, { zone: timeZone }).startOf('day');
  const last = DateTime.fromMillis(to.getTime() - 1, { zone: timeZone }).startOf('day');
  const days: string[] = [];
  for (let day = first; day <= last; day = day.plus({ days: 1 })) {
    if (days.length === MAX_RANGE_DAYS)
      throw invalidField(['query', 'date_from'], `The range is at most ${MAX_RANGE_DAYS} days`);
    days.push(day.toISODate()!);
  }
  return { from, to, days };
}

function parseBound(field: string, text: string, timeZone: string): { at: DateTime; dateOnly: boolean } {
  const dateOnly = DATE_ONLY.test(text);
  const at = DateTime.fromISO(text, { zone: timeZone });
  if (!at.isValid || (!dateOnly && !text.includes('T')) || at.year < 1 || at.year > 9999)
    throw invalidField(['query', field], 'An ISO date (2026-11-20) or timestamp (2026-11-20T09:00:00Z)');
  return { at: dateOnly ? at.startOf('day') : at, dateOnly };
}

/**
 * Whether the zone is UTC over the whole range (checked at each UTC midnight and noon), so day
 * rows are days of the zone.
 */
function isUtcThroughout(timeZone: string, from: Date, to: Date): boolean {
  const zone = IANAZone.create(timeZone);
  for (let at = from.getTime(); at <= to.getTime(); at += 12 * HOUR_MS)
    if (zone.offset(at) !== 0) return false;
  return true;
}

const ZERO_COUNTERS: Counters = {
  calls: 0,
  completed: 0,
  voicemail: 0,
  busy: 0,
  noAnswer: 0,
  failed: 0,
  canceled: 0,
  inbound: 0,
  outbound: 0,
  durationSeconds: 0,
  cost: 0,
  transfers: 0,
  turns: 0,
  interruptedTurns: 0,
};

function sum(groups: readonly GroupFigures[]): Figures {
  const figures: Figures = {
    ...ZERO_COUNTERS,
    histograms: Object.fromEntries(
      (Object.keys(HISTOGRAMS) as HistogramName[]).map((name) => [name, emptyHistogram()]),
    ) as Record<HistogramName, number[]>,
  };
  for (const group of groups) {
    for (const name of Object.keys(ZERO_COUNTERS) as Array<keyof Counters>) figures[name] += group[name];
    for (const name of Object.keys(HISTOGRAMS) as HistogramName[])
      addHistogram(figures.histograms[name], group.histograms[name]);
  }
  return figures;
}

function groupBy<K>(groups: readonly GroupFigures[], key: (group: GroupFigures) => K): Map<K, Figures> {
  const parts = new Map<K, GroupFigures[]>();
  for (const group of groups) parts.set(key(group), [...(parts.get(key(group)) ?? []), group]);
  return new Map([...parts].map(([k, members]) => [k, sum(members)]));
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));
const ratio = (part: number, whole: number) => (whole > 0 ? round(part / whole, 4) : 0);

function outcomes(figures: Counters) {
  return {
    calls: figures.calls,
    answered: figures.completed + figures.voicemail,
    completed: figures.completed,
    by_status: {
      completed: figures.completed,
      voicemail: figures.voicemail,
      busy: figures.busy,
      'no-answer': figures.noAnswer,
      failed: figures.failed,
      canceled: figures.canceled,
    },
    inbound: figures.inbound,
    outbound: figures.outbound,
  };
}

/** Calls, outcomes, durations and cost: the figures of the totals and of each assistant and number. */
function headline(figures: Figures) {
  const answered = figures.completed + figures.voicemail;
  const durations = figures.histograms.durationSeconds;
  return {
    ...outcomes(figures),
    duration_seconds: {
      total: figures.durationSeconds,
      avg: answered > 0 ? round(figures.durationSeconds / answered, 1) : null,
      p50: percentileOf(durations, 0.5),
      p95: percentileOf(durations, 0.95),
    },
    cost: round(figures.cost, 4),
  };
}

/** An assistant's or number's figures: the headline, transfers and the end-to-end latency. */
function breakdown(figures: Figures) {
  const latency = figures.histograms.endToEndMs;
  return {
    ...headline(figures),
    transfers: figures.transfers,
    end_to_end_ms: { p50: percentileOf(latency, 0.5), p95: percentileOf(latency, 0.95) },
  };
}

function dayView(counters: Counters = ZERO_COUNTERS) {
  return {
    ...outcomes(counters),
    duration_seconds: counters.durationSeconds,
    cost: round(counters.cost, 4),
    transfers: counters.transfers,
  };
}
