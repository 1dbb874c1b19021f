/**
 * Tools (tools_settings): the built-in ones a call may use (end_call, transfer_call, and the rest by
 * name), and the custom tools — each an HTTP endpoint or a cloud function, with the JSON Schema of
 * its parameters in a JSON box that the API checks on save (its error lands at the box). An HTTP
 * tool's header values are secrets: shown masked, kept while its URL stays.
 */
import { Button, SelectField } from '../../../ui/form.js';
import { Empty } from '../../../ui/page.js';
import { Setting, useEditor } from './field.js';
import { Every, Group } from './group.js';

const CUSTOM = 'tools_settings.custom_tools';

/** A new tool, the smallest the API accepts once named, described and pointed somewhere. */
const NEW_TOOL = {
  name: '',
  description: '',
  type: 'http',
  parameters: { type: 'object', properties: {} },
  timeout_seconds: 10,
  http: { url: '', method: 'POST' },
};

function CustomTool(props: { index: number }) {
  const { draft } = useEditor();
  const path = `${CUSTOM}.${props.index}`;
  const kind = draft.get(`${path}.type`) === 'function' ? 'function' : 'http';
  const n = `Tool ${props.index + 1}`;
  const name = String(draft.get(`${path}.name`) ?? '');
  return (
    <fieldset class="settings-set">
      <legend>
        {n}
        {name ? `: ${name}` : ''}
      </legend>
      <Setting path={`${path}.name`} label={`${n} name`} />
      <Setting path={`${path}.description`} label={`${n} description`} />
      <SelectField
        label={`${n} type`}
        help="http: a request to your endpoint; function: a function in the organization's cloud account."
        value={kind}
        onValue={(type) => draft.set(path, switchedTool({ ...(draft.get(path) as object), type }))}
        options={[
          { value: 'http', label: 'http' },
          { value: 'function', label: 'function' },
        ]}
      />
      <Setting path={`${path}.parameters`} label={`${n} parameters`} />
      <Setting path={`${path}.filler_message`} label={`${n} filler message`} />
      <Setting path={`${path}.timeout_seconds`} label={`${n} timeout seconds`} />
      {kind === 'http' ? (
        <>
          <Setting path={`${path}.http.url`} label={`${n} URL`} />
          <Setting path={`${path}.http.method`} label={`${n} method`} />
          <Setting path={`${path}.http.headers`} label={`${n} headers`} />
        </>
      ) : (
        <>
          <Setting path={`${path}.function.function_name`} label={`${n} function name`} />
          <Setting path={`${path}.function.region`} label={`${n} region`} />
        </>
      )}
      <Button kind="danger" onClick={() => draft.set(path, undefined)}>
        Remove {name || n.toLowerCase()}
      </Button>
    </fieldset>
  );
}

function CustomTools() {
  const { draft } = useEditor();
  const tools = (draft.get(CUSTOM) as unknown[] | undefined) ?? [];
  return (
    <fieldset class="settings-set">
      <legend>Custom tools</legend>
      {tools.length === 0 ? <Empty>No custom tool: add one for the model to call during calls.</Empty> : null}
      {tools.map((_, index) => (
        // Keyed by position and count: removing one re-reads the boxes of those after it.
        <CustomTool key={`${index}/${tools.length}`} index={index} />
      ))}
      <Button onClick={() => draft.set(`${CUSTOM}.${tools.length}`, structuredClone(NEW_TOOL))}>
        Add a custom tool
      </Button>
    </fieldset>
  );
}

/** A tool's type switched: the other type's part goes, the new type's starts empty. */
function switchedTool(tool: Record<string, unknown>): Record<string, unknown> {
  const { http, function: fn, ...rest } = tool;
  if (tool.type === 'function') return { ...rest, function: fn ?? { function_name: '' } };
  return { ...rest, http: http ?? { url: '', method: 'POST' } };
}

export function ToolsGroup() {
  return (
    <Group title="Tools" id="tools">
      <Setting path="tools_settings.enabled_tools" label="Enabled tools" />
      <fieldset class="settings-set">
        <legend>End call</legend>
        <Every object="tools_settings.end_call" prefix="End call: " />
      </fieldset>
      <fieldset class="settings-set">
        <legend>Transfer call</legend>
        <Every object="tools_settings.transfer_call" prefix="Transfer call: " />
      </fieldset>
      <CustomTools />
    </Group>
  );
}
