/**
 * A number's fields, as the add form and a number's page both show them: the number, its carrier,
 * its label, its routing and its SMS rate — each with its help and the API's error at it.
 */
import { SelectField, TextField } from '../../ui/form.js';
import { PROVIDERS, type Provider, type Routing, RoutingField } from './routing.js';

export interface NumberFieldValues {
  phone_number: string;
  provider: Provider;
  friendly_name: string;
  routing: Routing;
  rate: string;
}

export function NumberFields(props: {
  fields: NumberFieldValues;
  setFields(update: (fields: NumberFieldValues) => NumberFieldValues): void;
  /** The API's message for a field (useSubmit's `at`). */
  at(field: string): string | undefined;
  /** The add form explains more than a number's own page. */
  adding?: boolean;
}) {
  const { fields, setFields, at, adding } = props;
  const set =
    <K extends keyof NumberFieldValues>(name: K) =>
    (value: NumberFieldValues[K]) =>
      setFields((f) => ({ ...f, [name]: value }));
  return (
    <>
      <div class="row">
        <TextField
          label="Phone number"
          type="tel"
          autoComplete="off"
          value={fields.phone_number}
          onValue={set('phone_number')}
          help={adding ? 'With + and the country code, e.g. +1 415 555 2671.' : undefined}
          error={at('phone_number')}
        />
        <SelectField
          label="Carrier"
          value={fields.provider}
          onValue={(provider) => set('provider')(provider as Provider)}
          options={PROVIDERS}
          help={adding ? 'The carrier account the number belongs to.' : undefined}
          error={at('provider')}
        />
        <TextField
          label="Label"
          value={fields.friendly_name}
          onValue={set('friendly_name')}
          help={adding ? 'Optional, for people: “Support line”.' : undefined}
          error={at('friendly_name')}
        />
      </div>
      <div class="row">
        <RoutingField
          value={fields.routing}
          onValue={set('routing')}
          error={at('assistant_id') ?? at('graph_id')}
        />
        <TextField
          label="SMS rate (messages per second)"
          inputMode="decimal"
          value={fields.rate}
          onValue={set('rate')}
          help={
            adding
              ? "Empty: the carrier's usual limit (1 for long codes, 3 for toll-free)."
              : "How fast the SMS queue sends from this number. Empty: the carrier's usual limit."
          }
          error={at('sms_rate_per_second')}
        />
      </div>
    </>
  );
}
