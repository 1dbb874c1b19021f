/**
 * What the numbers pages share: the providers a number can belong to, and the routing choice — one
 * select holding "nobody", every assistant and every graph, so a number is routed to an assistant
 * or a graph and never both by construction (the API refuses both with 422 too).
 */
import type { components } from '../../../../clients/typescript/src/index.js';
import { ApiError, api, ok } from '../../lib/api.js';
import { useLoad } from '../../lib/load.js';
import { SelectField } from '../../ui/form.js';

export type PhoneNumber = components['schemas']['PhoneNumber'];
export type Provider = PhoneNumber['provider'];

export const PROVIDERS: Array<{ value: Provider; label: string }> = [
  { value: 'carrier_a', label: 'Carrier A' },
  { value: 'carrier_b', label: 'Carrier B' },
  { value: 'carrier_c', label: 'Carrier C' },
  { value: 'sip_trunk', label: 'SIP trunk' },
];

export function providerLabel(provider: string): string {
  return PROVIDERS.find((p) => p.value === provider)?.label ?? provider;
}

/** The select's value: `''`, `assistant:7` or `graph:4`. */
export type Routing = string;

export function routingOf(number: { assistant_id: number | null; graph_id: number | null }): Routing {
  if (number.assistant_id !== null) return `assistant:${number.assistant_id}`;
  if (number.graph_id !== null) return `graph:${number.graph_id}`;
  return '';
}

/** The body fields for a routing: both named, so a PUT ends the other kind of routing. */
export function routingBody(routing: Routing): { assistant_id: number | null; graph_id: number | null } {
  const [kind, id] = routing.split(':');
  return {
    assistant_id: kind === 'assistant' ? Number(id) : null,
    graph_id: kind === 'graph' ? Number(id) : null,
  };
}

/** The assistants and graphs a number may be routed to (the first 1000 of each). */
export function useRoutingTargets() {
  return useLoad(async () => {
    const [assistants, graphs] = await Promise.all([
      ok(api.GET('/api/v1/assistants', { params: { query: { limit: 1000 } } })),
      ok(api.GET('/api/v1/assistant-graphs', { params: { query: { limit: 1000 } } })),
    ]);
    return { assistants, graphs };
  }, []);
}

export function RoutingField(props: {
  value: Routing;
  onValue(value: Routing): void;
  error?: string | undefined;
}) {
  const targets = useRoutingTargets();
  const options = [{ value: '', label: 'Nobody (calls and messages are refused)' }];
  for (const assistant of targets.data?.assistants ?? [])
    options.push({ value: `assistant:${assistant.id}`, label: `Assistant: ${assistant.name}` });
  for (const graph of targets.data?.graphs ?? [])
    options.push({ value: `graph:${graph.id}`, label: `Graph: ${graph.name}` });
  // Until the lists arrive, keep the current value selectable so the select does not jump.
  if (props.value && !options.some((o) => o.value === props.value))
    options.push({ value: props.value, label: targets.loading ? 'Loading…' : props.value });
  return (
    <SelectField
      label="Routed to"
      value={props.value}
      onValue={props.onValue}
      options={options}
      help="An assistant answers the number's calls and messages; a graph starts with its entry assistant."
      error={
        props.error ??
        (targets.error ? `Could not list assistants and graphs: ${targets.error.message}` : undefined)
      }
    />
  );
}

/**
 * Reads the optional SMS rate field: empty means the carrier-typical default (null). Text that is
 * no number is refused here, at the field, as the API would (JSON cannot carry NaN: it would
 * silently become null, the default).
 */
export function rateBody(rate: string): number | null {
  if (rate.trim() === '') return null;
  const value = Number(rate);
  if (!Number.isFinite(value))
    throw new ApiError(422, 'SMS rate: must be a number', [
      { path: ['sms_rate_per_second'], message: 'Must be a number of messages per second' },
    ]);
  return value;
}
