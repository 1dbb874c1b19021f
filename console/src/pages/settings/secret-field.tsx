/**
 * Write-only secrets. The API never gives a stored secret back: it shows `****` and its last four
 * characters. A secret field therefore starts empty, says what is stored, and sends the masked value
 * back unchanged when left empty — which the API reads as "keep the stored one" — or what was typed.
 */
import { TextArea, TextField } from '../../ui/form.js';

export function SecretField(props: {
  label: string;
  /** The masked value the API showed (`****9f2c`), when one is stored. */
  stored: string | undefined;
  value: string;
  onValue(value: string): void;
  error?: string | undefined;
  help?: string;
  /** A key pasted with its line breaks (PEM): a text area, which keeps them. */
  multiline?: boolean;
}) {
  const help = props.stored
    ? `Saved: ${props.stored}. Leave empty to keep it; type to replace it.`
    : `Not saved yet.${props.help ? ` ${props.help}` : ''}`;
  if (props.multiline)
    return (
      <TextArea
        label={props.label}
        value={props.value}
        onValue={props.onValue}
        rows={3}
        help={help}
        error={props.error}
      />
    );
  return (
    <TextField
      label={props.label}
      type="password"
      autoComplete="new-password"
      value={props.value}
      onValue={props.onValue}
      help={help}
      error={props.error}
    />
  );
}

/** What to send for a secret field: the typed value, else the stored mask (kept), else nothing. */
export function secretBody(typed: string, stored: string | undefined): string | undefined {
  if (typed.trim() !== '') return typed;
  return stored;
}
