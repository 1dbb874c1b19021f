/**
 * Calendar arithmetic for recurring schedules, in the recurrence's own time zone: which local dates
 * a rule makes eligible (counted from its anchor), and the instant a wall-clock time has on a date
 * across DST gaps and overlaps. recurrence.ts reads a stored rule and asks these for the next run.
 */
import { DateTime } from 'luxon';

export const FREQUENCIES = ['daily', 'weekly', 'monthly'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

/** A recurring_config read and checked (`readRule` in recurrence.ts), in luxon's terms. */
export interface Rule {
  zone: string;
  frequency: Frequency;
  interval: number;
  days: Set<number>;
  dayOfMonth: number;
  hour: number;
  minute: number;
  /** Local midnight of the anchor date. */
  anchor: DateTime;
  /** Local midnight of the end date, or null. */
  end: DateTime | null;
}

/** Whole calendar days from `a` to `b` (both local midnights), DST-proof. */
function daysBetween(a: DateTime, b: DateTime): number {
  return Math.round(b.startOf('day').diff(a.startOf('day'), 'days').days);
}

/**
 * The eligible dates (local midnights) from `from` on, ascending, without end: the caller stops at
 * the first one late enough or past the end date. `from` is never before the anchor.
 */
export function* eligibleDays(rule: Rule, from: DateTime): Generator<DateTime> {
  const { anchor, interval } = rule;
  if (rule.frequency === 'daily') {
    const offset = daysBetween(anchor, from);
    let day = anchor.plus({ days: Math.ceil(offset / interval) * interval });
    for (;;) {
      yield day;
      day = day.plus({ days: interval });
    }
  }
  if (rule.frequency === 'weekly') {
    const anchorWeek = anchor.minus({ days: anchor.weekday - 1 });
    const weeks = Math.floor(daysBetween(anchorWeek, from) / 7);
    let week = anchorWeek.plus({ weeks: Math.ceil(weeks / interval) * interval });
    for (;;) {
      for (let weekday = 1; weekday <= 7; weekday++) {
        const day = week.plus({ days: weekday - 1 });
        if (rule.days.has(weekday) && day >= from) yield day;
      }
      week = week.plus({ weeks: interval });
    }
  }
  const anchorMonth = anchor.startOf('month');
  const months = (from.year - anchor.year) * 12 + (from.month - anchor.month);
  let month = anchorMonth.plus({ months: Math.ceil(months / interval) * interval });
  for (;;) {
    // A month without the day runs on its last day (31 → 30 April, 28 or 29 February).
    const day = month.set({ day: Math.min(rule.dayOfMonth, month.daysInMonth as number) });
    if (day >= from) yield day;
    month = month.plus({ months: interval });
  }
}

/**
 * The instant of wall-clock `hour:minute` on local date `day` in `zone`. luxon moves a time in a
 * spring-forward gap forward, as we want, but picks the later of a fall-back's two instants: every
 * offset the zone has around that day is tried, and the earliest instant showing that wall time wins.
 */
export function wallTime(zone: string, day: DateTime, hour: number, minute: number): Date {
  const fields = { year: day.year, month: day.month, day: day.day, hour, minute };
  const luxonPick = DateTime.fromObject(fields, { zone });
  const wallAsUtc = Date.UTC(fields.year, fields.month - 1, fields.day, hour, minute);
  let best = luxonPick.toMillis();
  for (const probe of [best - 86_400_000, best + 86_400_000]) {
    const offsetMinutes = DateTime.fromMillis(probe, { zone }).offset;
    const candidate = wallAsUtc - offsetMinutes * 60_000;
    const shown = DateTime.fromMillis(candidate, { zone });
    if (shown.hour === hour && shown.minute === minute && shown.day === fields.day && candidate < best)
      best = candidate;
  }
  return new Date(best);
}
