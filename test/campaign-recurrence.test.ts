/**
 * Campaign schedule rules without a database: `parseSchedule` (every validation rule, every problem
 * at once, the normalised result) and `nextRunAfter` (one-off, daily / weekly / monthly with
 * intervals counted from the anchor, month-end clamping, leap years, DST gaps and overlaps in
 * America/New_York and Europe/Berlin, end dates inclusive in the zone, zones far from UTC).
 */
import { describe, expect, it } from 'vitest';
import {
  nextRunAfter,
  type ParsedSchedule,
  parseSchedule,
  type ScheduleTiming,
} from '../src/domains/campaigns/schedules/recurrence.js';

// A Friday, 12:00 UTC: 2025-01-11 02:00 in Pacific/Kiritimati (+14), 01:00 in Pacific/Pago_Pago (-11).
const NOW = new Date('2025-01-10T12:00:00Z');

type Loc = Array<string | number>;

function issuesOf(body: unknown, now = NOW) {
  const result = parseSchedule(body, now);
  if (result.ok) throw new Error(`expected issues, got ${JSON.stringify(result.schedule)}`);
  return result.issues;
}

function parsed(body: unknown, now = NOW): ParsedSchedule {
  const result = parseSchedule(body, now);
  if (!result.ok) throw new Error(`expected a schedule, got ${JSON.stringify(result.issues)}`);
  return result.schedule;
}

/** A parsed schedule as `nextRunAfter` takes it (immediate has no runs). */
function timing(schedule: ParsedSchedule): ScheduleTiming {
  if (schedule.scheduleType === 'immediate') throw new Error('immediate has no runs');
  return schedule;
}

function recurring(config: Record<string, unknown>, timezone = 'UTC') {
  return { schedule_type: 'recurring', timezone, recurring_config: config };
}

/** A stored recurring schedule, as the executor would pass its row. */
function stored(config: Record<string, unknown>, timezone = 'UTC'): ScheduleTiming {
  return {
    scheduleType: 'recurring',
    scheduledAt: null,
    timezone,
    recurringConfig: { interval: 1, end_date: null, ...config },
  };
}

/** The next `count` runs, each strictly after the one before, starting after `after`. */
function runs(schedule: ScheduleTiming, after: string, count: number): Array<string | null> {
  const out: Array<string | null> = [];
  let cursor = new Date(after);
  for (let i = 0; i < count; i++) {
    const next = nextRunAfter(schedule, cursor);
    out.push(next?.toISOString() ?? null);
    if (!next) break;
    cursor = next;
  }
  return out;
}

describe('parseSchedule: the body', () => {
  it.each<[string, unknown, Loc, string]>([
    ['a non-object body', 'scheduled', ['body'], 'model_type'],
    ['an array body', [], ['body'], 'model_type'],
    ['a missing schedule_type', {}, ['body', 'schedule_type'], 'missing'],
    ['a null schedule_type', { schedule_type: null }, ['body', 'schedule_type'], 'missing'],
    ['an unknown schedule_type', { schedule_type: 'hourly' }, ['body', 'schedule_type'], 'enum'],
    ['an unknown key', { schedule_type: 'immediate', when: 'now' }, ['body', 'when'], 'extra_forbidden'],
    [
      'a bad timezone',
      { schedule_type: 'immediate', timezone: 'Mars/Olympus' },
      ['body', 'timezone'],
      'time_zone',
    ],
    [
      'a fixed offset as timezone',
      { schedule_type: 'immediate', timezone: '+02:00' },
      ['body', 'timezone'],
      'time_zone',
    ],
    ['a non-string timezone', { schedule_type: 'immediate', timezone: 5 }, ['body', 'timezone'], 'time_zone'],
    [
      'a too long timezone',
      { schedule_type: 'immediate', timezone: `Europe/${'x'.repeat(80)}` },
      ['body', 'timezone'],
      'time_zone',
    ],
    [
      'scheduled_at with immediate',
      { schedule_type: 'immediate', scheduled_at: '2030-01-01T00:00:00Z' },
      ['body', 'scheduled_at'],
      'extra_forbidden',
    ],
    [
      'recurring_config with immediate',
      { schedule_type: 'immediate', recurring_config: { frequency: 'daily', time: '09:00' } },
      ['body', 'recurring_config'],
      'extra_forbidden',
    ],
    [
      'recurring_config with scheduled',
      {
        schedule_type: 'scheduled',
        scheduled_at: '2030-01-01T00:00:00Z',
        recurring_config: { frequency: 'daily', time: '09:00' },
      },
      ['body', 'recurring_config'],
      'extra_forbidden',
    ],
    [
      'scheduled_at with recurring',
      { ...recurring({ frequency: 'daily', time: '09:00' }), scheduled_at: '2030-01-01T00:00:00Z' },
      ['body', 'scheduled_at'],
      'extra_forbidden',
    ],
  ])('refuses %s', (_name, body, loc, type) => {
    expect(issuesOf(body)).toContainEqual({ loc, msg: expect.any(String), type });
  });

  it('accepts immediate, with the default time zone and null fields that do not apply', () => {
    expect(parsed({ schedule_type: 'immediate' })).toEqual({
      scheduleType: 'immediate',
      scheduledAt: null,
      timezone: 'UTC',
      recurringConfig: null,
    });
    expect(
      parsed({ schedule_type: 'immediate', scheduled_at: null, recurring_config: null, timezone: null }),
    ).toMatchObject({ scheduleType: 'immediate', timezone: 'UTC' });
    expect(parsed({ schedule_type: 'immediate', timezone: 'Asia/Tokyo' }).timezone).toBe('Asia/Tokyo');
  });

  it('does not call fields "not applicable" when the schedule_type itself is wrong', () => {
    const issues = issuesOf({ schedule_type: 'weekly', scheduled_at: '2030-01-01T00:00:00Z' });
    expect(issues.map((i) => i.loc)).toEqual([['body', 'schedule_type']]);
  });
});

describe('parseSchedule: scheduled', () => {
  const scheduled = (scheduled_at: unknown, timezone?: string) => ({
    schedule_type: 'scheduled',
    scheduled_at,
    ...(timezone ? { timezone } : {}),
  });

  it.each<[string, unknown, string]>([
    ['missing', undefined, 'missing'],
    ['null', null, 'missing'],
    ['not a string', 1893456000, 'datetime_parsing'],
    ['words', 'tomorrow at nine', 'datetime_parsing'],
    ['a date without a time', '2030-01-01', 'datetime_parsing'],
    ['a space instead of T', '2030-01-01 09:00:00', 'datetime_parsing'],
    ['month 13', '2030-13-01T09:00:00', 'datetime_parsing'],
    ['30 February', '2030-02-30T09:00:00', 'datetime_parsing'],
    ['hour 24', '2030-01-01T24:00:00', 'datetime_parsing'],
    ['a week date', '2030-W01-1T09:00:00', 'datetime_parsing'],
    ['a time in the past', '2025-01-10T11:59:59Z', 'datetime_future'],
    ['exactly now', '2025-01-10T12:00:00Z', 'datetime_future'],
    ['a past wall time in the zone', '2025-01-10T11:00:00', 'datetime_future'],
  ])('refuses scheduled_at %s', (_name, value, type) => {
    expect(issuesOf(scheduled(value))).toEqual([
      { loc: ['body', 'scheduled_at'], msg: expect.any(String), type },
    ]);
  });

  it.each<[string, string, string | undefined, string]>([
    ['UTC with Z', '2025-01-10T12:00:01Z', undefined, '2025-01-10T12:00:01.000Z'],
    ['an offset', '2025-06-01T09:00:00+02:00', undefined, '2025-06-01T07:00:00.000Z'],
    [
      'an offset, whatever the timezone',
      '2025-06-01T09:00:00+02:00',
      'America/New_York',
      '2025-06-01T07:00:00.000Z',
    ],
    [
      'no offset: wall time in timezone (EDT)',
      '2025-06-01T09:00:00',
      'America/New_York',
      '2025-06-01T13:00:00.000Z',
    ],
    [
      'no offset: wall time in timezone (EST)',
      '2025-12-01T09:00',
      'America/New_York',
      '2025-12-01T14:00:00.000Z',
    ],
    ['no offset, default UTC', '2025-12-01T09:00:00.250', undefined, '2025-12-01T09:00:00.250Z'],
    [
      'a wall time in the spring-forward gap, moved forward',
      '2025-03-09T02:30:00',
      'America/New_York',
      '2025-03-09T07:30:00.000Z',
    ],
    [
      'a wall time +14 that is still the future in UTC',
      '2025-01-11T03:00:00',
      'Pacific/Kiritimati',
      '2025-01-10T13:00:00.000Z',
    ],
  ])('reads scheduled_at with %s', (_name, value, timezone, expected) => {
    const schedule = parsed(scheduled(value, timezone));
    expect(schedule.scheduleType).toBe('scheduled');
    expect(schedule.scheduledAt?.toISOString()).toBe(expected);
    expect(schedule.timezone).toBe(timezone ?? 'UTC');
  });

  it('refuses a wall time that is the past in a zone ahead of UTC', () => {
    // 2025-01-11T01:00 in Kiritimati is 2025-01-10T11:00Z, an hour before NOW.
    expect(issuesOf(scheduled('2025-01-11T01:00:00', 'Pacific/Kiritimati'))[0]?.type).toBe('datetime_future');
  });

  it('reports only the time zone when a time without an offset cannot be placed', () => {
    expect(issuesOf(scheduled('2030-01-01T09:00:00', 'Nowhere/City')).map((i) => i.loc)).toEqual([
      ['body', 'timezone'],
    ]);
    // With an offset the instant is known, but the bad zone is still refused.
    expect(issuesOf(scheduled('2020-01-01T09:00:00Z', 'Nowhere/City')).map((i) => i.loc)).toEqual([
      ['body', 'timezone'],
      ['body', 'scheduled_at'],
    ]);
  });
});

describe('parseSchedule: recurring', () => {
  const daily = { frequency: 'daily', time: '09:00' };

  it.each<[string, unknown, Loc, string]>([
    ['a missing recurring_config', { schedule_type: 'recurring' }, ['body', 'recurring_config'], 'missing'],
    [
      'a null recurring_config',
      { schedule_type: 'recurring', recurring_config: null },
      ['body', 'recurring_config'],
      'missing',
    ],
    [
      'an array recurring_config',
      { schedule_type: 'recurring', recurring_config: [] },
      ['body', 'recurring_config'],
      'model_type',
    ],
    [
      'a string recurring_config',
      { schedule_type: 'recurring', recurring_config: 'daily' },
      ['body', 'recurring_config'],
      'model_type',
    ],
  ])('refuses %s', (_name, body, loc, type) => {
    expect(issuesOf(body)).toEqual([{ loc, msg: expect.any(String), type }]);
  });

  it.each<[string, Record<string, unknown>, string, string]>([
    ['a missing frequency', { time: '09:00' }, 'frequency', 'missing'],
    ['an unknown frequency', { frequency: 'hourly', time: '09:00' }, 'frequency', 'enum'],
    ['interval 0', { ...daily, interval: 0 }, 'interval', 'int_range'],
    ['interval 366', { ...daily, interval: 366 }, 'interval', 'int_range'],
    ['interval 1.5', { ...daily, interval: 1.5 }, 'interval', 'int_range'],
    ['interval as a string', { ...daily, interval: '2' }, 'interval', 'int_range'],
    ['weekly without days_of_week', { frequency: 'weekly', time: '09:00' }, 'days_of_week', 'missing'],
    [
      'weekly with no days',
      { frequency: 'weekly', time: '09:00', days_of_week: [] },
      'days_of_week',
      'too_short',
    ],
    [
      'weekly with a day string',
      { frequency: 'weekly', time: '09:00', days_of_week: '1' },
      'days_of_week',
      'too_short',
    ],
    [
      'weekly with day 0',
      { frequency: 'weekly', time: '09:00', days_of_week: [0, 1] },
      'days_of_week',
      'int_range',
    ],
    [
      'weekly with day 8',
      { frequency: 'weekly', time: '09:00', days_of_week: [8] },
      'days_of_week',
      'int_range',
    ],
    [
      'weekly with day 1.5',
      { frequency: 'weekly', time: '09:00', days_of_week: [1.5] },
      'days_of_week',
      'int_range',
    ],
    [
      'weekly with a repeated day',
      { frequency: 'weekly', time: '09:00', days_of_week: [1, 3, 1] },
      'days_of_week',
      'unique_items',
    ],
    [
      'days_of_week on a daily recurrence',
      { ...daily, days_of_week: [1] },
      'days_of_week',
      'extra_forbidden',
    ],
    ['monthly without day_of_month', { frequency: 'monthly', time: '09:00' }, 'day_of_month', 'missing'],
    [
      'monthly with day 0',
      { frequency: 'monthly', time: '09:00', day_of_month: 0 },
      'day_of_month',
      'int_range',
    ],
    [
      'monthly with day 32',
      { frequency: 'monthly', time: '09:00', day_of_month: 32 },
      'day_of_month',
      'int_range',
    ],
    [
      'monthly with day "15"',
      { frequency: 'monthly', time: '09:00', day_of_month: '15' },
      'day_of_month',
      'int_range',
    ],
    [
      'day_of_month on a weekly recurrence',
      { frequency: 'weekly', time: '09:00', days_of_week: [1], day_of_month: 3 },
      'day_of_month',
      'extra_forbidden',
    ],
    ['a missing time', { frequency: 'daily' }, 'time', 'missing'],
    ['time 9:00', { frequency: 'daily', time: '9:00' }, 'time', 'string_pattern_mismatch'],
    ['time 24:00', { frequency: 'daily', time: '24:00' }, 'time', 'string_pattern_mismatch'],
    ['time 09:60', { frequency: 'daily', time: '09:60' }, 'time', 'string_pattern_mismatch'],
    ['time 0900', { frequency: 'daily', time: '0900' }, 'time', 'string_pattern_mismatch'],
    ['time 09:00:00', { frequency: 'daily', time: '09:00:00' }, 'time', 'string_pattern_mismatch'],
    ['time as a number', { frequency: 'daily', time: 900 }, 'time', 'string_pattern_mismatch'],
    ['a bad time_zone', { ...daily, time_zone: 'Europe/Atlantis' }, 'time_zone', 'time_zone'],
    ['end_date 30 February', { ...daily, end_date: '2025-02-30' }, 'end_date', 'date_parsing'],
    ['end_date with slashes', { ...daily, end_date: '2025/02/01' }, 'end_date', 'date_parsing'],
    ['end_date with a time', { ...daily, end_date: '2025-02-01T00:00:00Z' }, 'end_date', 'date_parsing'],
    ['end_date as a number', { ...daily, end_date: 20250201 }, 'end_date', 'date_parsing'],
    ['end_date before today', { ...daily, end_date: '2025-01-09' }, 'end_date', 'date_past'],
    [
      'end_date today, after the last run of today',
      { ...daily, end_date: '2025-01-10' },
      'end_date',
      'no_occurrence',
    ],
    [
      'end_date before the first weekly day',
      { frequency: 'weekly', time: '09:00', days_of_week: [1], end_date: '2025-01-12' },
      'end_date',
      'no_occurrence',
    ],
    ['an unknown key', { ...daily, hour: 9 }, 'hour', 'extra_forbidden'],
    ['the internal anchor_date', { ...daily, anchor_date: '2020-01-01' }, 'anchor_date', 'extra_forbidden'],
  ])('refuses %s', (_name, config, key, type) => {
    expect(issuesOf(recurring(config))).toEqual([
      { loc: ['body', 'recurring_config', key], msg: expect.any(String), type },
    ]);
  });

  it('judges end_date against today in the recurrence zone, not in UTC', () => {
    // NOW is already 2025-01-11 in Kiritimati: 2025-01-10 is yesterday there.
    expect(issuesOf(recurring({ ...daily, end_date: '2025-01-10' }, 'Pacific/Kiritimati'))[0]?.type).toBe(
      'date_past',
    );
    // …and still 2025-01-10 01:00 in Pago Pago: today, with 09:00 still to come.
    const schedule = parsed(recurring({ ...daily, end_date: '2025-01-10' }, 'Pacific/Pago_Pago'));
    expect(nextRunAfter(timing(schedule), NOW)?.toISOString()).toBe('2025-01-10T20:00:00.000Z');
  });

  it('reports every problem at once', () => {
    const issues = issuesOf({
      schedule_type: 'recurring',
      timezone: 'Bad/Zone',
      extra: true,
      recurring_config: {
        frequency: 'weekly',
        interval: 0,
        days_of_week: [1, 1],
        time: '25:00',
        time_zone: 'Also/Bad',
        end_date: 'soon',
        colour: 'red',
      },
    });
    expect(issues.map((i) => i.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'extra'],
        ['body', 'timezone'],
        ['body', 'recurring_config', 'colour'],
        ['body', 'recurring_config', 'interval'],
        ['body', 'recurring_config', 'days_of_week'],
        ['body', 'recurring_config', 'time'],
        ['body', 'recurring_config', 'time_zone'],
        ['body', 'recurring_config', 'end_date'],
      ]),
    );
    expect(issues).toHaveLength(8);
    for (const each of issues) expect(Object.keys(each).sort()).toEqual(['loc', 'msg', 'type']);
  });

  it('normalises the config: default interval, sorted days, the zone, the end date and the anchor', () => {
    expect(
      parsed(recurring({ frequency: 'weekly', days_of_week: [5, 1, 3], time: '18:45' }, 'Europe/Berlin')),
    ).toEqual({
      scheduleType: 'recurring',
      scheduledAt: null,
      timezone: 'Europe/Berlin',
      recurringConfig: {
        frequency: 'weekly',
        interval: 1,
        days_of_week: [1, 3, 5],
        time: '18:45',
        time_zone: 'Europe/Berlin',
        end_date: null,
        anchor_date: '2025-01-10',
      },
    });
    expect(
      parsed(
        recurring({ frequency: 'monthly', interval: 365, day_of_month: 31, time: '00:00', end_date: null }),
      ).recurringConfig,
    ).toEqual({
      frequency: 'monthly',
      interval: 365,
      day_of_month: 31,
      time: '00:00',
      time_zone: 'UTC',
      end_date: null,
      anchor_date: '2025-01-10',
    });
  });

  it('lets recurring_config.time_zone win over timezone, and anchors in that zone', () => {
    const schedule = parsed(
      recurring({ ...daily, time_zone: 'Pacific/Kiritimati', interval: null }, 'America/New_York'),
    );
    expect(schedule.timezone).toBe('America/New_York');
    expect(schedule.recurringConfig).toMatchObject({
      time_zone: 'Pacific/Kiritimati',
      interval: 1,
      anchor_date: '2025-01-11',
    });
    // 09:00 on 2025-01-11 at +14.
    expect(nextRunAfter(timing(schedule), NOW)?.toISOString()).toBe('2025-01-10T19:00:00.000Z');
  });

  it.each<[string, string, string]>([
    ['Pacific/Kiritimati', '2025-01-11', '2025-01-10T19:00:00.000Z'],
    ['Pacific/Pago_Pago', '2025-01-10', '2025-01-10T20:00:00.000Z'],
    ['UTC', '2025-01-10', '2025-01-11T09:00:00.000Z'],
  ])('anchors a schedule set at NOW in %s on %s', (zone, anchor, first) => {
    const schedule = parsed(recurring(daily, zone));
    expect(schedule.recurringConfig?.anchor_date).toBe(anchor);
    expect(nextRunAfter(timing(schedule), NOW)?.toISOString()).toBe(first);
  });

  it('accepts an end_date of today when a run of today is still ahead', () => {
    const schedule = parsed(recurring({ frequency: 'daily', time: '23:00', end_date: '2025-01-10' }));
    expect(runs(timing(schedule), NOW.toISOString(), 2)).toEqual(['2025-01-10T23:00:00.000Z', null]);
  });
});

describe('nextRunAfter: one-off', () => {
  const once: ScheduleTiming = {
    scheduleType: 'scheduled',
    scheduledAt: new Date('2025-02-01T09:00:00Z'),
    timezone: 'UTC',
    recurringConfig: null,
  };

  it.each<[string, string | null]>([
    ['2025-01-10T12:00:00Z', '2025-02-01T09:00:00.000Z'],
    ['2025-02-01T08:59:59.999Z', '2025-02-01T09:00:00.000Z'],
    ['2025-02-01T09:00:00Z', null],
    ['2025-03-01T00:00:00Z', null],
  ])('after %s → %s', (after, expected) => {
    expect(nextRunAfter(once, new Date(after))?.toISOString() ?? null).toBe(expected);
  });
});

describe('nextRunAfter: recurring', () => {
  it.each<[string, ScheduleTiming, string, Array<string | null>]>([
    [
      'daily, today still ahead',
      stored({ frequency: 'daily', time: '09:00', anchor_date: '2025-01-10' }),
      '2025-01-10T08:00:00Z',
      ['2025-01-10T09:00:00.000Z', '2025-01-11T09:00:00.000Z', '2025-01-12T09:00:00.000Z'],
    ],
    [
      'daily every 3 days from the anchor',
      stored({ frequency: 'daily', interval: 3, time: '09:00', anchor_date: '2025-01-10' }),
      '2025-01-10T10:00:00Z',
      ['2025-01-13T09:00:00.000Z', '2025-01-16T09:00:00.000Z', '2025-01-19T09:00:00.000Z'],
    ],
    [
      'daily every 3 days, long after the anchor',
      stored({ frequency: 'daily', interval: 3, time: '09:00', anchor_date: '2025-01-10' }),
      '2025-02-01T00:00:00Z',
      ['2025-02-03T09:00:00.000Z', '2025-02-06T09:00:00.000Z'],
    ],
    [
      'daily every 365 days',
      stored({ frequency: 'daily', interval: 365, time: '09:00', anchor_date: '2025-01-10' }),
      '2025-01-10T10:00:00Z',
      ['2026-01-10T09:00:00.000Z', '2027-01-10T09:00:00.000Z'],
    ],
    [
      'weekly Monday, Wednesday, Friday (anchored on a Wednesday)',
      stored({ frequency: 'weekly', days_of_week: [1, 3, 5], time: '10:00', anchor_date: '2025-01-08' }),
      '2025-01-08T09:00:00Z',
      [
        '2025-01-08T10:00:00.000Z',
        '2025-01-10T10:00:00.000Z',
        '2025-01-13T10:00:00.000Z',
        '2025-01-15T10:00:00.000Z',
      ],
    ],
    [
      'weekly every 2 weeks: Monday-start weeks from the anchor week, nothing before the anchor',
      stored({
        frequency: 'weekly',
        interval: 2,
        days_of_week: [1, 5],
        time: '10:00',
        anchor_date: '2025-01-08',
      }),
      '2025-01-06T00:00:00Z',
      [
        '2025-01-10T10:00:00.000Z',
        '2025-01-20T10:00:00.000Z',
        '2025-01-24T10:00:00.000Z',
        '2025-02-03T10:00:00.000Z',
      ],
    ],
    [
      'weekly on Sunday, the week’s last day',
      stored({ frequency: 'weekly', days_of_week: [7], time: '10:00', anchor_date: '2025-01-08' }),
      '2025-01-08T09:00:00Z',
      ['2025-01-12T10:00:00.000Z', '2025-01-19T10:00:00.000Z'],
    ],
    [
      'weekly every 3 weeks across the year end',
      stored({
        frequency: 'weekly',
        interval: 3,
        days_of_week: [2],
        time: '08:00',
        anchor_date: '2024-12-16',
      }),
      '2024-12-16T00:00:00Z',
      ['2024-12-17T08:00:00.000Z', '2025-01-07T08:00:00.000Z', '2025-01-28T08:00:00.000Z'],
    ],
    [
      'monthly on the 15th, anchored after this month’s 15th',
      stored({ frequency: 'monthly', day_of_month: 15, time: '09:00', anchor_date: '2025-01-20' }),
      '2025-01-20T00:00:00Z',
      ['2025-02-15T09:00:00.000Z', '2025-03-15T09:00:00.000Z'],
    ],
    [
      'monthly on the 31st: clamped to February 28 and April 30',
      stored({ frequency: 'monthly', day_of_month: 31, time: '09:00', anchor_date: '2025-01-05' }),
      '2025-01-05T00:00:00Z',
      [
        '2025-01-31T09:00:00.000Z',
        '2025-02-28T09:00:00.000Z',
        '2025-03-31T09:00:00.000Z',
        '2025-04-30T09:00:00.000Z',
        '2025-05-31T09:00:00.000Z',
      ],
    ],
    [
      'monthly on the 31st in a leap year: February 29',
      stored({ frequency: 'monthly', day_of_month: 31, time: '09:00', anchor_date: '2024-01-05' }),
      '2024-01-05T00:00:00Z',
      ['2024-01-31T09:00:00.000Z', '2024-02-29T09:00:00.000Z', '2024-03-31T09:00:00.000Z'],
    ],
    [
      'monthly on the 29th every 12 months: February 28, then 29 in 2028',
      stored({
        frequency: 'monthly',
        interval: 12,
        day_of_month: 29,
        time: '09:00',
        anchor_date: '2025-02-01',
      }),
      '2025-02-01T00:00:00Z',
      [
        '2025-02-28T09:00:00.000Z',
        '2026-02-28T09:00:00.000Z',
        '2027-02-28T09:00:00.000Z',
        '2028-02-29T09:00:00.000Z',
      ],
    ],
    [
      'monthly every 3 months from the anchor month, across the year end',
      stored({
        frequency: 'monthly',
        interval: 3,
        day_of_month: 10,
        time: '09:00',
        anchor_date: '2025-01-20',
      }),
      '2025-01-20T00:00:00Z',
      [
        '2025-04-10T09:00:00.000Z',
        '2025-07-10T09:00:00.000Z',
        '2025-10-10T09:00:00.000Z',
        '2026-01-10T09:00:00.000Z',
      ],
    ],
    [
      'monthly every 2 months on the 30th from December',
      stored({
        frequency: 'monthly',
        interval: 2,
        day_of_month: 30,
        time: '09:00',
        anchor_date: '2025-12-01',
      }),
      '2025-12-01T00:00:00Z',
      ['2025-12-30T09:00:00.000Z', '2026-02-28T09:00:00.000Z', '2026-04-30T09:00:00.000Z'],
    ],
    [
      'monthly every 2 months, long after the anchor',
      stored({
        frequency: 'monthly',
        interval: 2,
        day_of_month: 1,
        time: '09:00',
        anchor_date: '2025-01-01',
      }),
      '2025-06-15T00:00:00Z',
      ['2025-07-01T09:00:00.000Z', '2025-09-01T09:00:00.000Z'],
    ],
  ])('%s', (_name, schedule, after, expected) => {
    expect(runs(schedule, after, expected.length)).toEqual(expected);
  });

  it.each<[string, ScheduleTiming, string, Array<string | null>]>([
    [
      'New York spring forward: 02:30 does not exist on 9 March, it runs at 03:30 EDT',
      stored({ frequency: 'daily', time: '02:30', anchor_date: '2025-03-07' }, 'America/New_York'),
      '2025-03-07T00:00:00Z',
      [
        '2025-03-07T07:30:00.000Z',
        '2025-03-08T07:30:00.000Z',
        '2025-03-09T07:30:00.000Z',
        '2025-03-10T06:30:00.000Z',
      ],
    ],
    [
      'New York fall back: 01:30 happens twice on 2 November, the first (EDT) runs, once',
      stored({ frequency: 'daily', time: '01:30', anchor_date: '2025-10-31' }, 'America/New_York'),
      '2025-10-31T12:00:00Z',
      ['2025-11-01T05:30:00.000Z', '2025-11-02T05:30:00.000Z', '2025-11-03T06:30:00.000Z'],
    ],
    [
      'New York: 09:00 stays 09:00 across the change',
      stored(
        { frequency: 'weekly', days_of_week: [6, 7], time: '09:00', anchor_date: '2025-03-01' },
        'America/New_York',
      ),
      '2025-03-07T00:00:00Z',
      ['2025-03-08T14:00:00.000Z', '2025-03-09T13:00:00.000Z'],
    ],
    [
      'New York weekly on Sunday in the gap',
      stored(
        { frequency: 'weekly', days_of_week: [7], time: '02:30', anchor_date: '2025-03-03' },
        'America/New_York',
      ),
      '2025-03-03T00:00:00Z',
      ['2025-03-09T07:30:00.000Z', '2025-03-16T06:30:00.000Z'],
    ],
    [
      'Berlin spring forward: 02:30 on 30 March runs at 03:30 CEST',
      stored({ frequency: 'daily', time: '02:30', anchor_date: '2025-03-29' }, 'Europe/Berlin'),
      '2025-03-28T12:00:00Z',
      ['2025-03-29T01:30:00.000Z', '2025-03-30T01:30:00.000Z', '2025-03-31T00:30:00.000Z'],
    ],
    [
      'Berlin fall back: 02:30 on 26 October is the first, CEST',
      stored({ frequency: 'daily', time: '02:30', anchor_date: '2025-10-25' }, 'Europe/Berlin'),
      '2025-10-24T12:00:00Z',
      ['2025-10-25T00:30:00.000Z', '2025-10-26T00:30:00.000Z', '2025-10-27T01:30:00.000Z'],
    ],
    [
      'Berlin monthly on the last Sunday of October at 02:30',
      stored(
        { frequency: 'monthly', interval: 12, day_of_month: 26, time: '02:30', anchor_date: '2025-10-01' },
        'Europe/Berlin',
      ),
      '2025-10-01T00:00:00Z',
      ['2025-10-26T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    ],
    [
      'Kiritimati (+14): Monday 08:00 is Sunday in UTC',
      stored(
        { frequency: 'weekly', days_of_week: [1], time: '08:00', anchor_date: '2025-01-11' },
        'Pacific/Kiritimati',
      ),
      '2025-01-10T12:00:00Z',
      ['2025-01-12T18:00:00.000Z', '2025-01-19T18:00:00.000Z'],
    ],
    [
      'Pago Pago (-11): 20:00 is the next day in UTC',
      stored(
        { frequency: 'daily', interval: 2, time: '20:00', anchor_date: '2025-01-10' },
        'Pacific/Pago_Pago',
      ),
      '2025-01-10T12:00:00Z',
      ['2025-01-11T07:00:00.000Z', '2025-01-13T07:00:00.000Z'],
    ],
    [
      'end_date inclusive',
      stored({ frequency: 'daily', time: '09:00', anchor_date: '2025-01-10', end_date: '2025-01-12' }),
      '2025-01-10T10:00:00Z',
      ['2025-01-11T09:00:00.000Z', '2025-01-12T09:00:00.000Z', null],
    ],
    [
      'end_date in the zone: the last run of Kiritimati’s 12 January is 11 January in UTC',
      stored(
        { frequency: 'daily', time: '09:00', anchor_date: '2025-01-11', end_date: '2025-01-12' },
        'Pacific/Kiritimati',
      ),
      '2025-01-10T12:00:00Z',
      ['2025-01-10T19:00:00.000Z', '2025-01-11T19:00:00.000Z', null],
    ],
    [
      'end_date between two weekly runs',
      stored({
        frequency: 'weekly',
        days_of_week: [1],
        time: '09:00',
        anchor_date: '2025-01-06',
        end_date: '2025-01-19',
      }),
      '2025-01-06T00:00:00Z',
      ['2025-01-06T09:00:00.000Z', '2025-01-13T09:00:00.000Z', null],
    ],
    [
      'end_date on a clamped month end',
      stored({
        frequency: 'monthly',
        day_of_month: 31,
        time: '09:00',
        anchor_date: '2025-01-05',
        end_date: '2025-02-28',
      }),
      '2025-01-05T00:00:00Z',
      ['2025-01-31T09:00:00.000Z', '2025-02-28T09:00:00.000Z', null],
    ],
  ])('%s', (_name, schedule, after, expected) => {
    expect(runs(schedule, after, expected.length)).toEqual(expected);
  });

  it('uses recurring_config.time_zone over the schedule timezone', () => {
    const schedule = stored({
      frequency: 'daily',
      time: '09:00',
      time_zone: 'Asia/Tokyo',
      anchor_date: '2025-01-10',
    });
    expect(nextRunAfter(schedule, new Date('2025-01-10T00:00:00Z'))?.toISOString()).toBe(
      '2025-01-11T00:00:00.000Z',
    );
    const zoneless = stored({ frequency: 'daily', time: '09:00', anchor_date: '2025-01-10' }, 'Asia/Tokyo');
    expect(nextRunAfter(zoneless, new Date('2025-01-10T00:00:00Z'))?.toISOString()).toBe(
      '2025-01-11T00:00:00.000Z',
    );
  });

  it('takes an explicit anchor over anchor_date', () => {
    const schedule = {
      ...stored({ frequency: 'daily', interval: 2, time: '09:00', anchor_date: '2025-01-10' }),
      anchor: new Date('2025-01-11T05:00:00Z'),
    };
    expect(runs(schedule, '2025-01-10T00:00:00Z', 2)).toEqual([
      '2025-01-11T09:00:00.000Z',
      '2025-01-13T09:00:00.000Z',
    ]);
  });

  it('advances from a run to the next as the executor will (after = the run just made)', () => {
    const schedule = parsed(
      recurring({ frequency: 'weekly', interval: 2, days_of_week: [5], time: '12:30' }),
    );
    // NOW is Friday 12:00: today's 12:30 is the first run; then every other Friday.
    expect(runs(timing(schedule), NOW.toISOString(), 3)).toEqual([
      '2025-01-10T12:30:00.000Z',
      '2025-01-24T12:30:00.000Z',
      '2025-02-07T12:30:00.000Z',
    ]);
  });

  it.each<[string, Record<string, unknown> | null]>([
    ['no config', null],
    ['no anchor', { frequency: 'daily', time: '09:00' }],
    ['a bad frequency', { frequency: 'hourly', time: '09:00', anchor_date: '2025-01-01' }],
    ['a bad time', { frequency: 'daily', time: '9', anchor_date: '2025-01-01' }],
    ['weekly without days', { frequency: 'weekly', time: '09:00', anchor_date: '2025-01-01' }],
    ['monthly without a day', { frequency: 'monthly', time: '09:00', anchor_date: '2025-01-01' }],
    ['a bad zone', { frequency: 'daily', time: '09:00', time_zone: 'Nowhere', anchor_date: '2025-01-01' }],
  ])('throws on a stored config with %s', (_name, config) => {
    expect(() =>
      nextRunAfter(
        { scheduleType: 'recurring', scheduledAt: null, timezone: 'UTC', recurringConfig: config },
        NOW,
      ),
    ).toThrow(/Invalid recurring_config/);
  });
});
