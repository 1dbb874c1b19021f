/**
 * A campaign's schedule: what it is now (and when it next starts by itself), setting one — once at a
 * date and time, or recurring daily, weekly or monthly at a time of day in a zone — and taking a
 * scheduled campaign back to draft (`/unschedule`). The API checks the zone, that the time is in the
 * future and the end date; its errors land at their fields.
 */
import { useState } from 'preact/hooks';
import { api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { Button, CheckboxField, FormError, SelectField, TextField, useSubmit } from '../../ui/form.js';
import { Loading, when } from '../../ui/page.js';
import type { Campaign } from './model.js';

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const FREQUENCIES = [
  { value: 'daily', label: 'Daily' },
  { value: 'weekly', label: 'Weekly' },
  { value: 'monthly', label: 'Monthly' },
];

const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

type Frequency = 'daily' | 'weekly' | 'monthly';

function ScheduleForm(props: { campaign: Campaign; onChanged(): void }) {
  const [fields, setFields] = useState({
    type: 'scheduled' as 'scheduled' | 'recurring',
    at: '',
    timezone: browserZone,
    frequency: 'weekly' as Frequency,
    interval: '1',
    days: [1] as number[],
    dayOfMonth: '1',
    time: '09:00',
    endDate: '',
  });
  const set =
    <K extends keyof typeof fields>(key: K) =>
    (value: (typeof fields)[K]) =>
      setFields((f) => ({ ...f, [key]: value }));
  const [done, setDone] = useState<string | undefined>();
  const form = useSubmit(async () => {
    setDone(undefined);
    const recurring = fields.type === 'recurring';
    const answer = await ok(
      api.POST('/api/v1/campaigns/{campaign_id}/schedule', {
        params: { path: { campaign_id: props.campaign.id } },
        body: {
          schedule_type: fields.type,
          timezone: fields.timezone.trim() || null,
          scheduled_at: recurring ? null : fields.at || null,
          recurring_config: recurring
            ? {
                frequency: fields.frequency,
                interval: Number(fields.interval) || null,
                days_of_week: fields.frequency === 'weekly' ? fields.days : null,
                day_of_month: fields.frequency === 'monthly' ? Number(fields.dayOfMonth) : null,
                time: fields.time,
                end_date: fields.endDate || null,
              }
            : null,
        },
      }),
    );
    setDone(answer.message);
    props.onChanged();
  });
  const recurring = fields.type === 'recurring';
  return (
    <form onSubmit={form.submit} noValidate aria-label="Schedule the campaign">
      <FormError error={form.error} />
      <SelectField
        label="Runs"
        value={fields.type}
        onValue={(value) => set('type')(value as 'scheduled' | 'recurring')}
        options={[
          { value: 'scheduled', label: 'Once, at a date and time' },
          { value: 'recurring', label: 'On a recurrence' },
        ]}
        error={form.at('schedule_type')}
      />
      <TextField
        label="Time zone"
        value={fields.timezone}
        onValue={set('timezone')}
        help="An IANA zone name, such as Europe/Berlin."
        error={form.at('timezone')}
      />
      {recurring ? (
        <>
          <SelectField
            label="Frequency"
            value={fields.frequency}
            onValue={(value) => set('frequency')(value as Frequency)}
            options={FREQUENCIES}
            error={form.at('recurring_config.frequency')}
          />
          <TextField
            label="Every"
            type="number"
            min={1}
            value={fields.interval}
            onValue={set('interval')}
            help="Every N days, weeks or months (default 1)."
            error={form.at('recurring_config.interval')}
          />
          {fields.frequency === 'weekly' ? (
            <fieldset>
              <legend>Days of the week</legend>
              {DAYS.map((day, index) => (
                <CheckboxField
                  key={day}
                  label={day}
                  checked={fields.days.includes(index + 1)}
                  onValue={(checked) =>
                    set('days')(
                      checked
                        ? [...fields.days, index + 1].sort()
                        : fields.days.filter((d) => d !== index + 1),
                    )
                  }
                />
              ))}
              {form.at('recurring_config.days_of_week') ? (
                <p class="field-error">{form.at('recurring_config.days_of_week')}</p>
              ) : null}
            </fieldset>
          ) : null}
          {fields.frequency === 'monthly' ? (
            <TextField
              label="Day of the month"
              type="number"
              min={1}
              max={31}
              value={fields.dayOfMonth}
              onValue={set('dayOfMonth')}
              help="A month without that day runs on its last day."
              error={form.at('recurring_config.day_of_month')}
            />
          ) : null}
          <TextField
            label="Time of day"
            type="time"
            value={fields.time}
            onValue={set('time')}
            error={form.at('recurring_config.time')}
          />
          <TextField
            label="Last date (optional)"
            type="date"
            value={fields.endDate}
            onValue={set('endDate')}
            error={form.at('recurring_config.end_date')}
          />
        </>
      ) : (
        <TextField
          label="Starts at"
          type="datetime-local"
          value={fields.at}
          onValue={set('at')}
          help="Wall-clock time in the zone above; it must be in the future."
          error={form.at('scheduled_at')}
        />
      )}
      <Button type="submit" busy={form.busy}>
        Save the schedule
      </Button>
      {done ? <span role="status"> {done}</span> : null}
    </form>
  );
}

export function Schedule(props: { campaign: Campaign; onChanged(): void }) {
  const { campaign } = props;
  const schedule = useLoad(
    () =>
      ok(
        api.GET('/api/v1/campaigns/{campaign_id}/schedule', {
          params: { path: { campaign_id: campaign.id } },
        }),
      ),
    [campaign.id, campaign.status],
  );
  const unschedule = useSubmit(async () => {
    await ok(
      api.POST('/api/v1/campaigns/{campaign_id}/unschedule', {
        params: { path: { campaign_id: campaign.id } },
      }),
    );
    props.onChanged();
  });
  return (
    <>
      <Loading loaded={schedule}>
        {(current) => (
          <p>
            {current.schedule_type === 'immediate'
              ? 'No schedule: the campaign runs when it is started.'
              : `${current.schedule_type === 'recurring' ? 'Recurring' : 'Once'}, next start ${when(current.next_run_at)} (${current.timezone}).`}
          </p>
        )}
      </Loading>
      <FormError error={unschedule.error} />
      {campaign.status === 'scheduled' ? (
        <Button onClick={() => void unschedule.submit()} busy={unschedule.busy}>
          Unschedule (back to draft)
        </Button>
      ) : null}
      {campaign.status === 'draft' || campaign.status === 'scheduled' ? (
        <ScheduleForm campaign={campaign} onChanged={props.onChanged} />
      ) : (
        <p class="muted">A {campaign.status} campaign cannot be scheduled.</p>
      )}
    </>
  );
}
