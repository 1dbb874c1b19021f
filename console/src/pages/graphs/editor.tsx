/**
 * The side form of the graph page: every field the structure schema lets a node or an edge have
 * (docs/graphs.md "Nodes", "Edges"). A node: its assistant, its type, an escalation's transfer
 * number, and the rest of its free-form configuration as JSON. An edge: its ends, its condition type
 * and condition texts (several combine with AND/OR), priority, active, handoff sentence, description.
 * Changes go into the draft; "Save structure" sends them. The API's problems for the item are shown
 * at their fields (`errorAt`).
 */
import { useState } from 'preact/hooks';
import { Button, CheckboxField, SelectField, TextArea, TextField } from '../../ui/form.js';
import {
  CONDITIONS,
  type ConditionType,
  type DraftEdge,
  type DraftNode,
  NODE_TYPES,
  type NodeType,
} from './draft.js';

type Options = Array<{ value: string; label: string }>;

/** The configuration without `transfer_number` (which has a field of its own), as JSON text. */
function otherSettings(configuration: Record<string, unknown>): string {
  const { transfer_number: _, ...rest } = configuration;
  return Object.keys(rest).length === 0 ? '' : JSON.stringify(rest, null, 2);
}

export function NodeForm(props: {
  node: DraftNode;
  index: number;
  assistants: Options;
  onChange(node: DraftNode): void;
  onRemove(): void;
  errorAt(field: string): string | undefined;
}) {
  const { node, onChange, errorAt } = props;
  const [settings, setSettings] = useState(otherSettings(node.configuration));
  const [settingsError, setSettingsError] = useState<string | undefined>();
  const transfer = node.configuration.transfer_number;
  const assistants = props.assistants.some((a) => a.value === String(node.assistant_id))
    ? props.assistants
    : [...props.assistants, { value: String(node.assistant_id), label: `Assistant ${node.assistant_id}` }];
  const readSettings = (text: string) => {
    setSettings(text);
    let parsed: unknown = {};
    try {
      parsed = text.trim() === '' ? {} : JSON.parse(text);
    } catch {
      setSettingsError('Not JSON yet: the last valid settings are kept');
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setSettingsError('Settings are a JSON object, like {"key": "value"}');
      return;
    }
    setSettingsError(undefined);
    const kept = transfer === undefined ? {} : { transfer_number: transfer };
    onChange({ ...node, configuration: { ...(parsed as Record<string, unknown>), ...kept } });
  };
  return (
    <fieldset>
      <legend>Node {props.index}</legend>
      <SelectField
        label="Assistant"
        value={String(node.assistant_id)}
        onValue={(value) => onChange({ ...node, assistant_id: Number(value) })}
        options={assistants}
        error={errorAt('assistant_id')}
      />
      <SelectField
        label="Node type"
        value={node.node_type}
        onValue={(value) => onChange({ ...node, node_type: value as NodeType })}
        options={NODE_TYPES}
        help="A graph has exactly one entry node; no edge may leave an exit or escalation node."
        error={errorAt('node_type')}
      />
      {node.node_type === 'escalation' || transfer !== undefined ? (
        <TextField
          label="Transfer number"
          type="tel"
          value={typeof transfer === 'string' ? transfer : ''}
          onValue={(value) => {
            const { transfer_number: _, ...rest } = node.configuration;
            onChange({ ...node, configuration: value === '' ? rest : { ...rest, transfer_number: value } });
          }}
          help="Where an escalation node transfers the call (E.164, e.g. +14155550100)."
          error={errorAt('configuration.transfer_number')}
        />
      ) : null}
      <TextArea
        label="Other settings (JSON)"
        rows={3}
        value={settings}
        onValue={readSettings}
        help="Free-form settings of the node, kept with it."
        error={settingsError ?? errorAt('configuration')}
      />
      <Button kind="danger" onClick={props.onRemove}>
        Remove this node
      </Button>
    </fieldset>
  );
}

const FIELD_LABELS: Record<string, { label: string; help: string }> = {
  intent_pattern: {
    label: 'Keywords',
    help: 'Comma-separated words or phrases; any one heard in the caller’s words fires the edge.',
  },
  natural_language_trigger: {
    label: 'Natural-language trigger',
    help: 'A description the current assistant’s model judges against the conversation.',
  },
  mathematical_expression: {
    label: 'Mathematical expression',
    help: 'A comparison on the call’s numbers, e.g. call_duration > 120 or turn_count >= 5.',
  },
  state_variable_condition: {
    label: 'State-variable condition',
    help: 'A condition on the session context, e.g. customer.tier == "gold".',
  },
};

export function EdgeForm(props: {
  edge: DraftEdge;
  index: number;
  nodes: Options;
  onChange(edge: DraftEdge): void;
  onRemove(): void;
  errorAt(field: string): string | undefined;
}) {
  const { edge, onChange, errorAt } = props;
  const primary = CONDITIONS.find((c) => c.value === edge.condition_type)!;
  const others = CONDITIONS.filter((c) => c.field !== primary.field);
  // A removed end stays named, so the API can say which edge lost it.
  const ends = (key: string) =>
    props.nodes.some((n) => n.value === key)
      ? props.nodes
      : [...props.nodes, { value: key, label: '(removed node)' }];
  const conditionField = (field: keyof typeof FIELD_LABELS) => (
    <TextArea
      key={field}
      label={FIELD_LABELS[field]!.label}
      rows={2}
      value={edge[field as (typeof CONDITIONS)[number]['field']]}
      onValue={(value) => onChange({ ...edge, [field]: value })}
      help={FIELD_LABELS[field]!.help}
      error={errorAt(field)}
    />
  );
  const hasOthers = others.some((c) => edge[c.field].trim() !== '');
  return (
    <fieldset>
      <legend>Edge {props.index}</legend>
      <div class="row">
        <SelectField
          label="From"
          value={edge.from}
          onValue={(from) => onChange({ ...edge, from })}
          options={ends(edge.from)}
          error={errorAt('from_node_id')}
        />
        <SelectField
          label="To"
          value={edge.to}
          onValue={(to) => onChange({ ...edge, to })}
          options={ends(edge.to)}
          error={errorAt('to_node_id')}
        />
      </div>
      <SelectField
        label="Condition type"
        value={edge.condition_type}
        onValue={(value) => onChange({ ...edge, condition_type: value as ConditionType })}
        options={CONDITIONS.map((c) => ({ value: c.value, label: c.label }))}
        error={errorAt('condition_type')}
      />
      {conditionField(primary.field)}
      <details open={hasOthers || others.some((c) => errorAt(c.field))}>
        <summary>More conditions, combined with this one</summary>
        {others.map((c) => conditionField(c.field))}
        <SelectField
          label="Combine the conditions with"
          value={edge.condition_logic}
          onValue={(value) => onChange({ ...edge, condition_logic: value as 'AND' | 'OR' })}
          options={[
            { value: 'AND', label: 'AND (all must hold)' },
            { value: 'OR', label: 'OR (any one)' },
          ]}
          error={errorAt('condition_logic')}
        />
      </details>
      <div class="row">
        <TextField
          label="Priority"
          type="number"
          step={1}
          value={String(edge.priority)}
          onValue={(value) => onChange({ ...edge, priority: Number.parseInt(value, 10) || 0 })}
          help="Lower is tried first."
          error={errorAt('priority')}
        />
        <CheckboxField
          label="Active"
          checked={edge.is_active}
          onValue={(is_active) => onChange({ ...edge, is_active })}
          help="An inactive edge is never taken."
          error={errorAt('is_active')}
        />
      </div>
      <TextArea
        label="Handoff sentence"
        rows={2}
        value={edge.handoff_sentence}
        onValue={(handoff_sentence) => onChange({ ...edge, handoff_sentence })}
        help="Said in the next assistant’s voice when the conversation moves along this edge."
        error={errorAt('handoff_sentence')}
      />
      <TextField
        label="Edge description"
        value={edge.description}
        onValue={(description) => onChange({ ...edge, description })}
        error={errorAt('description')}
      />
      <Button kind="danger" onClick={props.onRemove}>
        Remove this edge
      </Button>
    </fieldset>
  );
}
