/**
 * One assistant setting, shown the way its schema in the API's document asks: a checkbox, a choice,
 * a number or text box, one line per item for a list of words, or a JSON box for anything freer.
 * Each says its help text and the default that applies when left empty, and shows the API's error at
 * it. The page shares the draft, the field documentation and the save's errors through EditorContext.
 */
import { createContext } from 'preact';
import { useContext, useState } from 'preact/hooks';
import { CheckboxField, SelectField, TextArea, TextField } from '../../../ui/form.js';
import { SecretField } from '../../settings/secret-field.js';
import type { Draft } from './draft.js';
import { type FieldDocs, type FieldSchema, labelOf, shownDefault } from './field-docs.js';
import { usableMask } from './secrets.js';

export interface Editor {
  draft: Draft;
  docs: FieldDocs;
  /** The API's error for a field (dotted path), or for something inside it. */
  at(path: string): string | undefined;
  /** Secrets typed so far, by path. */
  typed: Record<string, string>;
  type(path: string, value: string): void;
}

export const EditorContext = createContext<Editor | undefined>(undefined);

export function useEditor(): Editor {
  const editor = useContext(EditorContext);
  if (!editor) throw new Error('An assistant setting outside the editor');
  return editor;
}

/** The schema's help and the default together: what the field does and what empty means. */
function helpOf(docs: FieldDocs, path: string, extra?: string): string | undefined {
  const shown = shownDefault(docs.defaultOf(path));
  const parts = [docs.description(path), extra, shown ? `Default: ${shown}.` : undefined];
  const text = parts
    .filter(Boolean)
    .map((part) => (/[.!?)]$/.test(part!) ? part : `${part}.`))
    .join(' ');
  return text || undefined;
}

function kindOf(schema: FieldSchema): 'boolean' | 'choice' | 'number' | 'text' | 'lines' | 'json' {
  if (schema.type === 'boolean') return 'boolean';
  if (schema.enum) return 'choice';
  if (schema.type === 'number' || schema.type === 'integer') return 'number';
  if (schema.type === 'string') return 'text';
  if (schema.type === 'array' && schema.items?.type === 'string' && !schema.items.enum) return 'lines';
  return 'json';
}

/** Text typed into a number box: a number when it reads as one, else as typed (the API says why not). */
function numberOf(text: string): unknown {
  return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
}

export function Setting(props: { path: string; label?: string; help?: string; long?: boolean }) {
  const { draft, docs, at } = useEditor();
  const { path } = props;
  const schema = docs.schema(path);
  if (!schema) return null;
  const label = props.label ?? labelOf(path.split('.').at(-1)!);
  const help = helpOf(docs, path, props.help);
  const error = at(path);
  const value = draft.get(path);
  // Empty: null where the API takes null, otherwise left out so the default applies.
  const empty = docs.nullable(path) ? null : undefined;
  const kind = kindOf(schema);
  if (kind === 'boolean') {
    if (schema.default === undefined && docs.defaultOf(path) === undefined)
      return (
        <SelectField
          label={label}
          help={help}
          error={error}
          value={value === undefined || value === null ? '' : String(value)}
          onValue={(v) => draft.set(path, v === '' ? empty : v === 'true')}
          options={[
            { value: '', label: 'Default' },
            { value: 'true', label: 'On' },
            { value: 'false', label: 'Off' },
          ]}
        />
      );
    return (
      <CheckboxField
        label={label}
        help={help}
        error={error}
        checked={Boolean(value ?? docs.defaultOf(path))}
        onValue={(checked) => draft.set(path, checked)}
      />
    );
  }
  if (kind === 'choice') {
    const options = schema.enum!.map((option) => ({ value: option, label: option }));
    const unset = docs.nullable(path) || docs.defaultOf(path) === undefined;
    return (
      <SelectField
        label={label}
        help={help}
        error={error}
        value={typeof value === 'string' ? value : ''}
        onValue={(v) => draft.set(path, v === '' ? empty : v)}
        options={unset ? [{ value: '', label: 'Default' }, ...options] : options}
      />
    );
  }
  if (kind === 'number') return <NumberSetting path={path} label={label} help={help} empty={empty} />;
  if (kind === 'text') {
    const text = typeof value === 'string' ? value : '';
    const onValue = (v: string) => draft.set(path, v === '' ? empty : v);
    return props.long || (schema.format !== 'uri' && (schema.maxLength ?? 0) > 2000) ? (
      <TextArea label={label} help={help} error={error} value={text} onValue={onValue} rows={6} />
    ) : (
      <TextField label={label} help={help} error={error} value={text} onValue={onValue} />
    );
  }
  if (kind === 'lines')
    return (
      <TextArea
        label={label}
        help={`${help ?? ''} One per line.`.trim()}
        error={error}
        rows={3}
        value={Array.isArray(value) ? value.join('\n') : ''}
        onValue={(v) =>
          draft.set(
            path,
            v.split('\n').filter((line) => line.trim() !== ''),
          )
        }
      />
    );
  return <JsonSetting path={path} label={label} help={help} empty={empty} />;
}

function NumberSetting(props: { path: string; label: string; help?: string; empty: null | undefined }) {
  const { draft, at } = useEditor();
  const value = draft.get(props.path);
  // The text as typed ("0."), kept apart from the number it stands for.
  const [text, setText] = useState(value === undefined || value === null ? '' : String(value));
  return (
    <TextField
      label={props.label}
      help={props.help}
      error={at(props.path)}
      inputMode="decimal"
      value={text}
      onValue={(typed) => {
        setText(typed);
        draft.set(props.path, typed.trim() === '' ? props.empty : numberOf(typed));
      }}
    />
  );
}

/** A JSON box: what cannot be parsed is kept as text, and the save says so at the box. */
export function JsonSetting(props: { path: string; label: string; help?: string; empty: null | undefined }) {
  const { draft, at } = useEditor();
  const value = draft.get(props.path);
  const [text, setText] = useState(
    value === undefined || value === null ? '' : JSON.stringify(value, null, 2),
  );
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <TextArea
      label={props.label}
      help={`${props.help ?? ''} JSON.`.trim()}
      error={problem ?? at(props.path)}
      rows={Math.min(12, Math.max(3, text.split('\n').length))}
      value={text}
      onValue={(typed) => {
        setText(typed);
        if (typed.trim() === '') {
          setProblem(undefined);
          draft.set(props.path, props.empty);
          return;
        }
        try {
          draft.set(props.path, JSON.parse(typed));
          setProblem(undefined);
        } catch {
          setProblem('Not valid JSON yet');
        }
      }}
    />
  );
}

/** A vendor key: write-only, shown masked, asked for again when its provider changes. */
export function SecretSetting(props: { path: string; label: string }) {
  const { draft, docs, at, typed, type } = useEditor();
  const stored = draft.get(props.path);
  const mask = usableMask(draft.saved, draft.value, props.path);
  const orphaned = typeof stored === 'string' && !mask;
  return (
    <SecretField
      label={props.label}
      stored={mask}
      value={typed[props.path] ?? ''}
      onValue={(value) => type(props.path, value)}
      error={at(props.path)}
      help={
        orphaned
          ? 'The saved key belonged to the previous provider or address: type the key for the new one.'
          : docs.description(props.path)
      }
    />
  );
}
