/**
 * The graph drawn: each node a box (its assistant, its type, the entry marked), each edge an arrow
 * with its condition cut short (the full text is the edge's `<title>`, shown on hover and read by
 * screen readers). Boxes and arrows are buttons: Enter or a click picks one for the side form. A
 * simulated path is highlighted (class `on-path`), and the analytics' session counts ride on the
 * boxes. Where things go is layout.ts's business; this only paints it.
 */
import { useId } from 'preact/hooks';
import { conditionLabel, conditionText, type Draft } from './draft.js';
import { layout, NODE_HEIGHT, NODE_WIDTH } from './layout.js';

export type Selection = { kind: 'node' | 'edge'; key: string } | null;

export interface Highlight {
  nodes: Set<string>;
  edges: Set<string>;
}

export const NO_HIGHLIGHT: Highlight = { nodes: new Set(), edges: new Set() };

/** What a node is called on the page: its assistant's name and, to tell twins apart, its place. */
export function nodeName(draft: Draft, key: string, names: Map<number, string>): string {
  const index = draft.nodes.findIndex((n) => n.key === key);
  const node = draft.nodes[index];
  if (!node) return 'a removed node';
  return `${names.get(node.assistant_id) ?? `Assistant ${node.assistant_id}`} (node ${index})`;
}

const short = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Enter and Space press a focused box or arrow, as they would a button. */
function pressable(label: string, onPress: () => void) {
  return {
    role: 'button' as const,
    // Lower-case: an SVG element's attribute names are case-sensitive (tabIndex would be ignored).
    tabindex: 0,
    'aria-label': label,
    onClick: onPress,
    onKeyDown: (event: KeyboardEvent) => {
      if (event.key !== 'Enter' && event.key !== ' ') return;
      event.preventDefault();
      onPress();
    },
  };
}

export function Drawing(props: {
  draft: Draft;
  names: Map<number, string>;
  selected: Selection;
  onSelect(selection: Selection): void;
  highlight: Highlight;
  /** Sessions that entered each node (analytics), by node key. */
  counts?: Map<string, number>;
  title: string;
}) {
  const { draft, names, selected, highlight } = props;
  const id = useId();
  const entry = draft.nodes.find((n) => n.node_type === 'entry')?.key;
  const placed = layout(
    draft.nodes,
    draft.edges.map((e) => ({ key: e.key, from: e.from, to: e.to })),
    entry,
  );
  const edgesByKey = new Map(draft.edges.map((e) => [e.key, e]));
  const is = (kind: 'node' | 'edge', key: string) => selected?.kind === kind && selected.key === key;
  return (
    <div class="graph-canvas">
      <svg
        width={placed.width}
        height={placed.height}
        viewBox={`0 0 ${placed.width} ${placed.height}`}
        aria-labelledby={`${id}-title`}
        class="graph-drawing"
      >
        <title id={`${id}-title`}>{props.title}</title>
        <defs>
          <marker
            id={`${id}-arrow`}
            viewBox="0 0 10 10"
            refX="9"
            refY="5"
            // In drawing units: a highlighted (thicker) line keeps the same arrowhead.
            markerUnits="userSpaceOnUse"
            markerWidth="10"
            markerHeight="10"
            orient="auto-start-reverse"
          >
            <path d="M 0 0 L 10 5 L 0 10 z" class="graph-arrowhead" />
          </marker>
        </defs>
        {placed.edges.map((shape) => {
          const edge = edgesByKey.get(shape.key)!;
          const full = conditionText(edge);
          const classes = [
            'graph-edge',
            shape.back ? 'back' : '',
            edge.is_active ? '' : 'inactive',
            highlight.edges.has(shape.key) ? 'on-path' : '',
            is('edge', shape.key) ? 'selected' : '',
          ];
          return (
            <g
              key={shape.key}
              class={classes.filter(Boolean).join(' ')}
              data-key={shape.key}
              {...pressable(
                `Edge from ${nodeName(draft, edge.from, names)} to ${nodeName(draft, edge.to, names)}: ${full}`,
                () => props.onSelect({ kind: 'edge', key: shape.key }),
              )}
            >
              <title>{full}</title>
              <path d={shape.path} class="graph-edge-hit" />
              <path d={shape.path} class="graph-edge-line" marker-end={`url(#${id}-arrow)`} />
              <text x={shape.label.x} y={shape.label.y - 4} text-anchor="middle" class="graph-edge-label">
                {conditionLabel(edge)}
              </text>
            </g>
          );
        })}
        {draft.nodes.map((node) => {
          const box = placed.nodes.get(node.key)!;
          const name = names.get(node.assistant_id) ?? `Assistant ${node.assistant_id}`;
          const count = props.counts?.get(node.key);
          const classes = [
            'graph-node',
            node.node_type,
            highlight.nodes.has(node.key) ? 'on-path' : '',
            is('node', node.key) ? 'selected' : '',
          ];
          return (
            <g
              key={node.key}
              class={classes.filter(Boolean).join(' ')}
              data-key={node.key}
              transform={`translate(${box.x} ${box.y})`}
              {...pressable(`${nodeName(draft, node.key, names)}, ${node.node_type} node`, () =>
                props.onSelect({ kind: 'node', key: node.key }),
              )}
            >
              <title>{`${name} — ${node.node_type}`}</title>
              <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="8" class="graph-node-box" />
              <text x="10" y="22" class="graph-node-name">
                {short(name, 20)}
              </text>
              <text x="10" y="44" class="graph-node-type">
                {node.node_type === 'entry' ? '▶ entry' : node.node_type}
                {count !== undefined ? ` · ${count} session${count === 1 ? '' : 's'}` : ''}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
