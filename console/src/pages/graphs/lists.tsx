/**
 * The drawing in words: tables of the nodes and of the edges (what a screen reader or a narrow
 * screen uses instead of the picture), each row with a button that opens it in the side form. Also
 * the API's refusal of a save as a list naming the node or edge each problem is about.
 */
import { Button } from '../../ui/form.js';
import { conditionText, type Draft, type Placed } from './draft.js';
import { type Highlight, nodeName, type Selection } from './drawing.js';

export function NodeList(props: {
  draft: Draft;
  names: Map<number, string>;
  highlight: Highlight;
  counts?: Map<string, number>;
  onSelect(selection: Selection): void;
}) {
  const { draft, names, highlight } = props;
  return (
    <table class="graph-list">
      <caption>Nodes</caption>
      <thead>
        <tr>
          <th scope="col">Node</th>
          <th scope="col">Type</th>
          <th scope="col">Simulated path</th>
          {props.counts ? (
            <th scope="col" class="number">
              Sessions
            </th>
          ) : null}
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {draft.nodes.map((node) => (
          <tr key={node.key} class={highlight.nodes.has(node.key) ? 'on-path' : undefined}>
            <th scope="row">{nodeName(draft, node.key, names)}</th>
            <td>{node.node_type}</td>
            <td>{highlight.nodes.has(node.key) ? 'on the path' : '—'}</td>
            {props.counts ? <td class="number">{props.counts.get(node.key) ?? 0}</td> : null}
            <td>
              <Button
                aria-label={`Edit ${nodeName(draft, node.key, names)}`}
                onClick={() => props.onSelect({ kind: 'node', key: node.key })}
              >
                Edit
              </Button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function EdgeList(props: {
  draft: Draft;
  names: Map<number, string>;
  highlight: Highlight;
  onSelect(selection: Selection): void;
}) {
  const { draft, names, highlight } = props;
  if (draft.edges.length === 0) return <p class="muted">No edges yet: add one to route between nodes.</p>;
  return (
    <table class="graph-list">
      <caption>Edges</caption>
      <thead>
        <tr>
          <th scope="col">Edge</th>
          <th scope="col">From</th>
          <th scope="col">To</th>
          <th scope="col">Condition</th>
          <th scope="col" class="number">
            Priority
          </th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {draft.edges.map((edge, index) => (
          <tr key={edge.key} class={highlight.edges.has(edge.key) ? 'on-path' : undefined}>
            <th scope="row">
              {index}
              {edge.is_active ? null : <span class="tag">inactive</span>}
              {highlight.edges.has(edge.key) ? <span class="tag">taken</span> : null}
            </th>
            <td>{nodeName(draft, edge.from, names)}</td>
            <td>{nodeName(draft, edge.to, names)}</td>
            <td>{conditionText(edge)}</td>
            <td class="number">{edge.priority}</td>
            <td>
              <Button
                aria-label={`Edit edge ${index}`}
                onClick={() => props.onSelect({ kind: 'edge', key: edge.key })}
              >
                Edit
              </Button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Every problem of a refused save; the node or edge named is a button that opens it. */
export function Problems(props: {
  problems: Placed[];
  draft: Draft;
  names: Map<number, string>;
  onSelect(selection: Selection): void;
}) {
  if (props.problems.length === 0) return null;
  const { draft, names } = props;
  return (
    <div class="form-error" role="alert">
      <p>The structure was not saved:</p>
      <ul class="graph-problems">
        {props.problems.map((problem, i) => {
          const key = problem.key;
          const index = problem.kind === 'edge' ? draft.edges.findIndex((e) => e.key === key) : -1;
          const what =
            problem.kind === 'node' && key
              ? nodeName(draft, key, names)
              : problem.kind === 'edge' && key
                ? `Edge ${index}`
                : 'The graph';
          return (
            <li key={i}>
              {key && problem.kind !== 'graph' ? (
                <button
                  type="button"
                  class="button plain"
                  onClick={() => props.onSelect({ kind: problem.kind as 'node' | 'edge', key })}
                >
                  {what}
                </button>
              ) : (
                <strong>{what}</strong>
              )}
              : {problem.message}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
