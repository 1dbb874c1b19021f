/**
 * A group of settings: a titled panel, and `Every`, which shows every field of a settings object the
 * API's schema lists (nested objects as fieldsets, secrets as write-only fields) — so a field added
 * to the API appears in the editor without a change here. A group names a field's label where the
 * bare key would be ambiguous on the page ("Enabled" is in five groups).
 */
import type { ComponentChildren } from 'preact';
import { Panel } from '../../../ui/page.js';
import { SecretSetting, Setting, useEditor } from './field.js';
import { labelOf } from './field-docs.js';
import { isSecret } from './secrets.js';

export function Group(props: { title: string; id: string; intro?: string; children: ComponentChildren }) {
  return (
    <Panel title={props.title} id={props.id}>
      {props.intro ? <p class="muted">{props.intro}</p> : null}
      <div class="settings-grid">{props.children}</div>
    </Panel>
  );
}

export function Every(props: {
  /** The settings object (`interruption_settings`, `stt_settings.endpointing`). */
  object: string;
  /** Fields shown elsewhere (or by hand) in the group. */
  skip?: string[];
  /** Labels by field key, where the key alone would be unclear. */
  labels?: Record<string, string>;
  /** Put before every generated label (`End call: `). */
  prefix?: string;
}) {
  const { docs } = useEditor();
  const fields = Object.entries(docs.schema(props.object)?.properties ?? {});
  return (
    <>
      {fields
        .filter(([key]) => !props.skip?.includes(key))
        .map(([key, schema]) => {
          const path = `${props.object}.${key}`;
          const label = props.labels?.[key] ?? `${props.prefix ?? ''}${labelOf(key)}`;
          if (isSecret(path)) return <SecretSetting key={path} path={path} label={label} />;
          if (schema.type === 'object' && Object.keys(schema.properties ?? {}).length > 0)
            return (
              <fieldset key={path} class="settings-set">
                <legend>{label}</legend>
                <Every object={path} prefix={`${label}: `} />
              </fieldset>
            );
          return <Setting key={path} path={path} label={label} />;
        })}
    </>
  );
}
