/**
 * Form pieces that are accessible by construction: every control has a visible label tied to it,
 * its help text and its error are announced with it (`aria-describedby`), an error marks it invalid
 * and is shown at the field it concerns, and a form's own error is an alert at its top.
 */
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import { ApiError } from '../lib/api.js';

interface FieldProps {
  label: string;
  help?: ComponentChildren;
  error?: string | undefined;
}

function described(id: string, props: FieldProps): string | undefined {
  const ids = [props.help ? `${id}-help` : '', props.error ? `${id}-error` : ''].filter(Boolean);
  return ids.length > 0 ? ids.join(' ') : undefined;
}

function FieldNotes(props: FieldProps & { id: string }) {
  return (
    <>
      {props.help ? (
        <p class="help" id={`${props.id}-help`}>
          {props.help}
        </p>
      ) : null}
      {props.error ? (
        <p class="field-error" id={`${props.id}-error`}>
          {props.error}
        </p>
      ) : null}
    </>
  );
}

type InputProps = FieldProps & {
  value: string;
  onValue(value: string): void;
  type?:
    | 'text'
    | 'email'
    | 'password'
    | 'number'
    | 'url'
    | 'tel'
    | 'search'
    | 'datetime-local'
    | 'date'
    | 'time';
  name?: string;
  autoComplete?: string;
  required?: boolean;
  inputMode?: 'numeric' | 'decimal' | 'text' | 'tel' | 'email' | 'url';
  placeholder?: string;
  min?: number | string;
  max?: number | string;
  step?: number | string;
};

export function TextField(props: InputProps) {
  const { label, help, error, value, onValue, type, ...rest } = props;
  const id = useId();
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      <input
        {...rest}
        // Preact types each input type's attributes apart; the ones taken here fit every type listed.
        type={(type ?? 'text') as 'text'}
        id={id}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described(id, props)}
      />
      <FieldNotes id={id} label={label} help={help} error={error} />
    </div>
  );
}

export function TextArea(
  props: FieldProps & { value: string; onValue(value: string): void; rows?: number; name?: string },
) {
  const { label, help, error, value, onValue, rows, name } = props;
  const id = useId();
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      <textarea
        id={id}
        name={name}
        rows={rows ?? 4}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described(id, props)}
      />
      <FieldNotes id={id} label={label} help={help} error={error} />
    </div>
  );
}

export function SelectField(
  props: FieldProps & {
    value: string;
    onValue(value: string): void;
    options: Array<{ value: string; label: string }>;
    name?: string;
  },
) {
  const { label, help, error, value, onValue, options, name } = props;
  const id = useId();
  return (
    <div class={`field${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      <select
        id={id}
        name={name}
        value={value}
        onChange={(event) => onValue(event.currentTarget.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described(id, props)}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <FieldNotes id={id} label={label} help={help} error={error} />
    </div>
  );
}

export function CheckboxField(
  props: FieldProps & { checked: boolean; onValue(checked: boolean): void; name?: string },
) {
  const { label, help, error, checked, onValue, name } = props;
  const id = useId();
  return (
    <div class={`field checkbox${error ? ' invalid' : ''}`}>
      <input
        type="checkbox"
        id={id}
        name={name}
        checked={checked}
        onChange={(event) => onValue(event.currentTarget.checked)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described(id, props)}
      />
      <label for={id}>{label}</label>
      <FieldNotes id={id} label={label} help={help} error={error} />
    </div>
  );
}

/** A form's own error (not tied to one field), announced when it appears. */
export function FormError(props: { error: ApiError | Error | undefined }) {
  if (!props.error) return null;
  return (
    <div class="form-error" role="alert">
      {props.error.message}
    </div>
  );
}

/**
 * Runs a form's action: busy while it runs (the button says so and cannot be pressed twice), its
 * failure kept for the form to show — at the fields the API named, and at the top.
 */
export function useSubmit<T>(action: () => Promise<T>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | Error | undefined>();
  const submit = async (event?: Event) => {
    event?.preventDefault();
    if (busy) return undefined;
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (caught) {
      setError(caught instanceof Error ? caught : new Error(String(caught)));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  /** The API's message for one field (dotted path), to show at that field. */
  const at = (field: string) => (error instanceof ApiError ? error.problemAt(field) : undefined);
  return { busy, error, submit, at, setError };
}

export function Button(
  props: ButtonHTMLAttributes & { busy?: boolean; kind?: 'primary' | 'danger' | 'plain' },
) {
  const { busy, kind, children, disabled, ...rest } = props;
  return (
    <button
      type="button"
      {...rest}
      class={`button ${kind ?? 'plain'}`}
      disabled={Boolean(disabled) || busy}
      aria-busy={busy ? true : undefined}
    >
      {children}
    </button>
  );
}
