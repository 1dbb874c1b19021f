/**
 * Campaign schedules without I/O: `parseSchedule` checks a POST …/schedule body (every problem at
 * once), and `nextRunAfter` says when a schedule runs next. Both work in the schedule's own time
 * zone through luxon, so "09:00 every Monday in Europe/Berlin" stays 09:00 across DST changes.
 *
 * Interval counting needs a fixed origin: the **anchor**, the date (in the recurrence's zone) the
 * schedule was set. It is stored in `recurring_config.anchor_date`, an internal key the API view
 * hides. daily → every N days from the anchor date; weekly → every N Monday-start weeks from the
 * anchor's week; monthly → every N months from the anchor's month. Nothing before the anchor runs.
 * Which dates those are, and a wall time's instant across DST changes, is in calendar.ts.
 */
import { DateTime, IANAZone } from 'luxon';
import { isStorableInstant } from '../../../lib/time.js';
import type { ValidationIssue } from '../../errors.js';
import { eligibleDays, FREQUENCIES, type Frequency, type Rule, wallTime } from './calendar.js';

export { FREQUENCIES, type Frequency };

export const SCHEDULE_TYPES = ['immediate', 'scheduled', 'recurring'] as const;
export type ScheduleType = (typeof SCHEDULE_TYPES)[number];

export const MAX_INTERVAL = 365;
export const DEFAULT_TIMEZONE = 'UTC';
/** Keys of recurring_config that the platform keeps for itself and the API does not show. */
export const INTERNAL_CONFIG_KEYS = ['anchor_date'] as const;

/** recurring_config as stored (jsonb): the client's fields normalised, plus the anchor. */
// A type alias, not an interface: it must be assignable to the jsonb column's Record type.
export type RecurringConfig = {
  frequency: Frequency;
  interval: number;
  /** weekly only: ascending, distinct, 1 (Monday) … 7 (Sunday). */
  days_of_week?: number[];
  /** monthly only: 1–31; a month without that day runs on its last day. */
  day_of_month?: number;
  /** 24-hour `HH:MM`, wall-clock time in `time_zone`. */
  time: string;
  /** The zone the recurrence runs in: the client's `time_zone`, else the schedule's `timezone`. */
  time_zone: string;
  /** Last date (inclusive, in `time_zone`) on which a run may happen; null for none. */
  end_date: string | null;
  /** The date the schedule was set, in `time_zone`: the origin of interval counting. */
  anchor_date: string;
};

export type ParsedSchedule =
  | { scheduleType: 'immediate'; scheduledAt: null; timezone: string; recurringConfig: null }
  | { scheduleType: 'scheduled'; scheduledAt: Date; timezone: string; recurringConfig: null }
  | { scheduleType: 'recurring'; scheduledAt: null; timezone: string; recurringConfig: RecurringConfig };

export type ParseResult = { ok: true; schedule: ParsedSchedule } | { ok: false; issues: ValidationIssue[] };

/** What `nextRunAfter` needs: a schedule row, or a parsed schedule. */
export interface ScheduleTiming {
  scheduleType: 'scheduled' | 'recurring';
  scheduledAt: Date | null;
  timezone: string;
  recurringConfig: Record<string, unknown> | null;
  /** Overrides `recurring_config.anchor_date` (its date in the recurrence's zone counts). */
  anchor?: Date;
}

const BODY_KEYS = new Set(['schedule_type', 'scheduled_at', 'timezone', 'recurring_config']);
const CONFIG_KEYS = new Set([
  'frequency',
  'interval',
  'days_of_week',
  'day_of_month',
  'time',
  'time_zone',
  'end_date',
]);
// ISO 8601 calendar date and time (seconds and fraction optional), with an optional offset. luxon
// alone would also take week dates, ordinals and hour 24; the API promises only this form.
const DATE_TIME =
  /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3])(:?[0-5]\d)?)?$/i;
const HAS_OFFSET = /(Z|[+-]\d{2}(:?\d{2})?)$/i;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;
const MAX_ZONE_LENGTH = 64;

/** IANA names start with a letter (`Etc/GMT+2` included); `+02:00` never does. */
const ZONE_NAME_START = /^[A-Za-z]/;

/**
 * Whether `zone` is an IANA zone name (`Europe/Berlin`, `UTC`); fixed offsets are not. The name's
 * first character is checked here because Node 24's ICU accepts offsets such as `+02:00` as zones.
 */
export function isIanaZone(zone: unknown): zone is string {
  return (
    typeof zone === 'string' &&
    zone.length <= MAX_ZONE_LENGTH &&
    ZONE_NAME_START.test(zone) &&
    IANAZone.isValidZone(zone)
  );
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);
const given = (value: unknown) => value !== undefined && value !== null;

/**
 * Checks a schedule body and normalises it. `now` decides what is in the past and becomes the
 * anchor of a recurring schedule. Fields that do not apply to the schedule type must be absent or
 * null (a `scheduled_at` sent with `recurring` would otherwise be silently ignored).
 */
export function parseSchedule(input: unknown, now: Date): ParseResult {
  const issues: ValidationIssue[] = [];
  const issue = (loc: Array<string | number>, msg: string, type = 'value_error') =>
    issues.push({ loc: ['body', ...loc], msg, type });

  if (!isObject(input)) {
    issue([], 'The body must be a JSON object', 'model_type');
    return { ok: false, issues };
  }
  for (const key of Object.keys(input)) {
    if (!BODY_KEYS.has(key)) issue([key], 'Extra inputs are not permitted', 'extra_forbidden');
  }

  const type = input.schedule_type;
  // A field that does not apply is reported only once the type is known to be valid.
  const known = (SCHEDULE_TYPES as readonly unknown[]).includes(type);
  if (type === undefined || type === null) issue(['schedule_type'], 'Field required', 'missing');
  else if (!known)
    issue(['schedule_type'], `Input should be ${SCHEDULE_TYPES.map((t) => `'${t}'`).join(', ')}`, 'enum');

  let timezone: string | undefined = DEFAULT_TIMEZONE;
  if (given(input.timezone)) {
    if (isIanaZone(input.timezone)) timezone = input.timezone;
    else {
      issue(['timezone'], 'Not an IANA time zone name (such as Europe/Berlin or UTC)', 'time_zone');
      timezone = undefined;
    }
  }

  let scheduledAt: Date | undefined;
  if (type === 'scheduled') {
    if (!given(input.scheduled_at))
      issue(['scheduled_at'], 'Field required for a scheduled schedule', 'missing');
    else
      scheduledAt = parseInstant(input.scheduled_at, timezone, now, (msg, t) =>
        issue(['scheduled_at'], msg, t),
      );
  } else if (given(input.scheduled_at) && known) {
    issue(['scheduled_at'], 'scheduled_at applies to schedule_type scheduled only', 'extra_forbidden');
  }

  let config: RecurringConfig | undefined;
  if (type === 'recurring') {
    if (!given(input.recurring_config))
      issue(['recurring_config'], 'Field required for a recurring schedule', 'missing');
    else config = parseRecurring(input.recurring_config, timezone, now, issue);
  } else if (given(input.recurring_config) && known) {
    issue(
      ['recurring_config'],
      'recurring_config applies to schedule_type recurring only',
      'extra_forbidden',
    );
  }

  if (issues.length > 0 || timezone === undefined) return { ok: false, issues };
  if (type === 'scheduled' && scheduledAt)
    return {
      ok: true,
      schedule: { scheduleType: 'scheduled', scheduledAt, timezone, recurringConfig: null },
    };
  if (type === 'recurring' && config)
    return {
      ok: true,
      schedule: { scheduleType: 'recurring', scheduledAt: null, timezone, recurringConfig: config },
    };
  return {
    ok: true,
    schedule: { scheduleType: 'immediate', scheduledAt: null, timezone, recurringConfig: null },
  };
}

/** A future instant from `scheduled_at`; without an offset it is wall-clock time in `zone`. */
function parseInstant(
  value: unknown,
  zone: string | undefined,
  now: Date,
  issue: (msg: string, type?: string) => void,
): Date | undefined {
  if (typeof value !== 'string' || !DATE_TIME.test(value)) {
    issue(
      'Not an ISO 8601 date and time (such as 2030-05-01T09:00:00 or 2030-05-01T09:00:00+02:00)',
      'datetime_parsing',
    );
    return undefined;
  }
  // Without an offset the time is read in the schedule's zone, which must then be valid (its own
  // issue is reported already).
  if (!HAS_OFFSET.test(value) && zone === undefined) return undefined;
  const parsed = DateTime.fromISO(value, { zone: zone ?? DEFAULT_TIMEZONE });
  if (!parsed.isValid) {
    issue('Not a valid date and time', 'datetime_parsing');
    return undefined;
  }
  const instant = parsed.toJSDate();
  if (!isStorableInstant(instant)) {
    issue('scheduled_at must be before the year 10000 (UTC)', 'datetime_too_late');
    return undefined;
  }
  if (instant.getTime() <= now.getTime()) {
    issue('scheduled_at must be in the future', 'datetime_future');
    return undefined;
  }
  return instant;
}

function parseRecurring(
  value: unknown,
  scheduleZone: string | undefined,
  now: Date,
  report: (loc: Array<string | number>, msg: string, type?: string) => void,
): RecurringConfig | undefined {
  const at = 'recurring_config';
  if (!isObject(value)) {
    report([at], 'recurring_config must be an object', 'model_type');
    return undefined;
  }
  let problems = 0;
  const issue = (key: string, msg: string, type = 'value_error') => {
    problems += 1;
    report([at, key], msg, type);
  };
  for (const key of Object.keys(value)) {
    if (!CONFIG_KEYS.has(key)) issue(key, 'Extra inputs are not permitted', 'extra_forbidden');
  }

  const frequency = value.frequency;
  const knownFrequency = (FREQUENCIES as readonly unknown[]).includes(frequency);
  if (!given(frequency)) issue('frequency', 'Field required', 'missing');
  else if (!knownFrequency)
    issue('frequency', `Input should be ${FREQUENCIES.map((f) => `'${f}'`).join(', ')}`, 'enum');

  let interval = 1;
  if (given(value.interval)) {
    if (!isInteger(value.interval) || value.interval < 1 || value.interval > MAX_INTERVAL)
      issue('interval', `interval must be an integer from 1 to ${MAX_INTERVAL}`, 'int_range');
    else interval = value.interval;
  }

  let days: number[] | undefined;
  if (frequency === 'weekly') {
    const raw = value.days_of_week;
    if (!given(raw)) issue('days_of_week', 'Field required for a weekly recurrence', 'missing');
    else if (!Array.isArray(raw) || raw.length === 0)
      issue('days_of_week', 'days_of_week must be a non-empty array of days 1-7 (Monday is 1)', 'too_short');
    else if (!raw.every((d) => isInteger(d) && d >= 1 && d <= 7))
      issue('days_of_week', 'Every day must be an integer from 1 (Monday) to 7 (Sunday)', 'int_range');
    else if (new Set(raw).size !== raw.length) issue('days_of_week', 'Days must not repeat', 'unique_items');
    else days = [...(raw as number[])].sort((a, b) => a - b);
  } else if (given(value.days_of_week) && knownFrequency) {
    issue('days_of_week', 'days_of_week applies to a weekly recurrence only', 'extra_forbidden');
  }

  let dayOfMonth: number | undefined;
  if (frequency === 'monthly') {
    const raw = value.day_of_month;
    if (!given(raw)) issue('day_of_month', 'Field required for a monthly recurrence', 'missing');
    else if (!isInteger(raw) || raw < 1 || raw > 31)
      issue('day_of_month', 'day_of_month must be an integer from 1 to 31', 'int_range');
    else dayOfMonth = raw;
  } else if (given(value.day_of_month) && knownFrequency) {
    issue('day_of_month', 'day_of_month applies to a monthly recurrence only', 'extra_forbidden');
  }

  let time: string | undefined;
  if (!given(value.time)) issue('time', 'Field required', 'missing');
  else if (typeof value.time !== 'string' || !TIME.test(value.time))
    issue('time', 'time must be 24-hour HH:MM (such as 09:30)', 'string_pattern_mismatch');
  else time = value.time;

  // recurring_config.time_zone wins over the schedule's timezone when both are given.
  let zone = scheduleZone;
  if (given(value.time_zone)) {
    if (isIanaZone(value.time_zone)) zone = value.time_zone;
    else {
      issue('time_zone', 'Not an IANA time zone name (such as Europe/Berlin or UTC)', 'time_zone');
      zone = undefined;
    }
  }

  let endDate: string | null = null;
  if (given(value.end_date)) {
    const raw = value.end_date;
    if (typeof raw !== 'string' || !DATE.test(raw) || !DateTime.fromISO(raw, { zone: 'UTC' }).isValid)
      issue('end_date', 'end_date must be an ISO 8601 date (YYYY-MM-DD)', 'date_parsing');
    else if (zone !== undefined && raw < todayIn(zone, now))
      issue('end_date', 'end_date must not be before today (in the recurrence time zone)', 'date_past');
    else endDate = raw;
  }

  if (problems > 0 || zone === undefined || time === undefined) return undefined;
  const config: RecurringConfig = {
    frequency: frequency as Frequency,
    interval,
    ...(days ? { days_of_week: days } : {}),
    ...(dayOfMonth !== undefined ? { day_of_month: dayOfMonth } : {}),
    time,
    time_zone: zone,
    end_date: endDate,
    anchor_date: todayIn(zone, now),
  };
  const next = nextRunAfter(
    { scheduleType: 'recurring', scheduledAt: null, timezone: zone, recurringConfig: { ...config } },
    now,
  );
  if (next === null) {
    issue('end_date', 'No run is left before end_date', 'no_occurrence');
    return undefined;
  }
  return config;
}

/** Today's date (`YYYY-MM-DD`) in `zone` at `now`. */
function todayIn(zone: string, now: Date): string {
  return DateTime.fromJSDate(now, { zone }).toISODate() as string;
}

/**
 * The first run strictly after `after`, or null when none is left: a one-off's own time if it is
 * later; for a recurring schedule the next eligible date (per frequency, interval and anchor) at
 * `time` in the recurrence zone, up to `end_date` inclusive. A wall time that does not exist that
 * day (spring forward) moves forward by the gap; one that occurs twice (fall back) is the first.
 * Throws on a stored recurring_config that is not one `parseSchedule` produced.
 */
export function nextRunAfter(schedule: ScheduleTiming, after: Date): Date | null {
  if (schedule.scheduleType === 'scheduled') {
    const at = schedule.scheduledAt;
    return at !== null && at.getTime() > after.getTime() ? at : null;
  }
  const rule = readRule(schedule);
  const afterMs = after.getTime();
  const afterLocal = DateTime.fromJSDate(after, { zone: rule.zone }).startOf('day');
  // A day before `after`'s date as well: zone days and instants need not line up exactly.
  const from = DateTime.max(afterLocal.minus({ days: 1 }), rule.anchor);
  for (const day of eligibleDays(rule, from)) {
    if (rule.end !== null && day > rule.end) return null;
    const at = wallTime(rule.zone, day, rule.hour, rule.minute);
    if (at.getTime() > afterMs) return at;
  }
  /* c8 ignore next */
  throw new Error('nextRunAfter: no eligible day found');
}

function readRule(schedule: ScheduleTiming): Rule {
  const config = schedule.recurringConfig;
  const fail = (why: string): never => {
    throw new Error(`Invalid recurring_config: ${why}`);
  };
  if (!isObject(config)) return fail('missing');
  const zone = given(config.time_zone) ? config.time_zone : schedule.timezone;
  if (!isIanaZone(zone)) return fail('time zone');
  const frequency = config.frequency as Frequency;
  if (!FREQUENCIES.includes(frequency)) return fail('frequency');
  const interval = given(config.interval) ? config.interval : 1;
  if (!isInteger(interval) || interval < 1) return fail('interval');
  const time = typeof config.time === 'string' ? TIME.exec(config.time) : null;
  if (!time) return fail('time');
  const days = new Set(Array.isArray(config.days_of_week) ? (config.days_of_week as number[]) : []);
  if (frequency === 'weekly' && days.size === 0) return fail('days_of_week');
  const dayOfMonth = config.day_of_month;
  if (frequency === 'monthly' && !isInteger(dayOfMonth)) return fail('day_of_month');
  const localDate = (value: unknown) =>
    typeof value === 'string' && DATE.test(value) ? DateTime.fromISO(value, { zone }) : null;
  const anchor = schedule.anchor
    ? DateTime.fromJSDate(schedule.anchor, { zone }).startOf('day')
    : localDate(config.anchor_date);
  if (!anchor?.isValid) return fail('anchor_date');
  const end = given(config.end_date) ? localDate(config.end_date) : null;
  if (end !== null && !end.isValid) return fail('end_date');
  return {
    zone,
    frequency,
    interval,
    days,
    dayOfMonth: isInteger(dayOfMonth) ? dayOfMonth : 1,
    hour: Number(time[1]),
    minute: Number(time[2]),
    anchor,
    end,
  };
}
