/**
 * Where the graph drawing puts its nodes and how it draws its edges: a small layered layout, pure
 * (no DOM), so that it is tested on its own. Edges that close a cycle (found by a depth-first walk
 * from the entry) are set aside as back edges; the rest form a DAG whose longest path from the
 * entry gives each node its column. One barycenter pass orders each column by the mean row of the
 * node's neighbours in earlier columns, which removes most crossings of ordinary graphs. Back edges
 * and self-loops are drawn as curves around the boxes so they never hide a forward arrow.
 */

export const NODE_WIDTH = 160;
export const NODE_HEIGHT = 64;
// Wide enough for a condition label between two columns.
const GAP_X = 140;
const GAP_Y = 40;
const PAD = 28;

export interface LayoutNodeIn {
  key: string;
}
export interface LayoutEdgeIn {
  key: string;
  from: string;
  to: string;
}

export interface PlacedNode {
  key: string;
  column: number;
  row: number;
  /** Top-left corner of the box. */
  x: number;
  y: number;
}

export interface PlacedEdge {
  key: string;
  from: string;
  to: string;
  /** Closes a cycle (or loops on its node): drawn curved. */
  back: boolean;
  /** SVG path data, from the source box's border to the target's. */
  path: string;
  /** Where the condition label sits. */
  label: { x: number; y: number };
}

export interface Layout {
  nodes: Map<string, PlacedNode>;
  edges: PlacedEdge[];
  width: number;
  height: number;
}

/**
 * The edges that close a cycle: depth-first from the entry, then from every node not reached yet
 * (in the order given); an edge into a node still on the walk's stack is a back edge.
 */
export function backEdges(nodes: LayoutNodeIn[], edges: LayoutEdgeIn[], entry?: string): Set<string> {
  const out = new Map<string, LayoutEdgeIn[]>(nodes.map((n) => [n.key, []]));
  for (const edge of edges) out.get(edge.from)?.push(edge);
  const state = new Map<string, 'open' | 'done'>();
  const back = new Set<string>();
  const visit = (start: string) => {
    // Iterative, so a long chain cannot overflow the stack.
    const stack: Array<{ key: string; next: number }> = [{ key: start, next: 0 }];
    state.set(start, 'open');
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const leaving = out.get(top.key) ?? [];
      if (top.next >= leaving.length) {
        state.set(top.key, 'done');
        stack.pop();
        continue;
      }
      const edge = leaving[top.next++]!;
      const seen = state.get(edge.to);
      if (seen === 'open') back.add(edge.key);
      else if (seen === undefined && out.has(edge.to)) {
        state.set(edge.to, 'open');
        stack.push({ key: edge.to, next: 0 });
      }
    }
  };
  if (entry !== undefined && out.has(entry)) visit(entry);
  for (const node of nodes) if (!state.has(node.key)) visit(node.key);
  return back;
}

/** Column of each node: the longest forward path reaching it (0 for the entry and for sources). */
export function columns(nodes: LayoutNodeIn[], forward: LayoutEdgeIn[]): Map<string, number> {
  const incoming = new Map<string, number>(nodes.map((n) => [n.key, 0]));
  const out = new Map<string, string[]>(nodes.map((n) => [n.key, []]));
  for (const edge of forward) {
    if (!incoming.has(edge.to) || !out.has(edge.from)) continue;
    incoming.set(edge.to, incoming.get(edge.to)! + 1);
    out.get(edge.from)!.push(edge.to);
  }
  const column = new Map<string, number>(nodes.map((n) => [n.key, 0]));
  const ready = nodes.filter((n) => incoming.get(n.key) === 0).map((n) => n.key);
  while (ready.length > 0) {
    const key = ready.shift()!;
    for (const next of out.get(key)!) {
      column.set(next, Math.max(column.get(next)!, column.get(key)! + 1));
      const left = incoming.get(next)! - 1;
      incoming.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  return column;
}

/**
 * The nodes of each column in drawing order: first as given, then (column by column, left to
 * right) sorted by the mean row of their neighbours in earlier columns; a node without such a
 * neighbour keeps its own row as its weight. Ties keep the given order.
 */
export function orderColumns(
  nodes: LayoutNodeIn[],
  edges: LayoutEdgeIn[],
  column: Map<string, number>,
): string[][] {
  const count = Math.max(-1, ...column.values()) + 1;
  const byColumn: string[][] = Array.from({ length: count }, () => []);
  for (const node of nodes) byColumn[column.get(node.key)!]!.push(node.key);
  const row = new Map<string, number>();
  for (const [i, key] of (byColumn[0] ?? []).entries()) row.set(key, i);
  for (let c = 1; c < count; c++) {
    const keys = byColumn[c]!;
    const weight = new Map<string, number>();
    keys.forEach((key, i) => {
      const earlier: number[] = [];
      for (const edge of edges) {
        const other = edge.to === key ? edge.from : edge.from === key ? edge.to : undefined;
        if (other === undefined || other === key) continue;
        if ((column.get(other) ?? c) < c) earlier.push(row.get(other)!);
      }
      weight.set(key, earlier.length > 0 ? earlier.reduce((a, b) => a + b, 0) / earlier.length : i);
    });
    const given = new Map(keys.map((key, i) => [key, i]));
    keys.sort((a, b) => weight.get(a)! - weight.get(b)! || given.get(a)! - given.get(b)!);
    for (const [i, key] of keys.entries()) row.set(key, i);
  }
  return byColumn;
}

/** Crossings between forward edges of adjacent columns: how tidy an order is (used by the tests). */
export function crossings(layout: Layout): number {
  const spans = layout.edges
    .filter((e) => !e.back)
    .map((e) => ({ a: layout.nodes.get(e.from)!, b: layout.nodes.get(e.to)! }))
    .filter(({ a, b }) => b.column === a.column + 1);
  let total = 0;
  for (let i = 0; i < spans.length; i++)
    for (let j = i + 1; j < spans.length; j++) {
      const p = spans[i]!;
      const q = spans[j]!;
      if (p.a.column !== q.a.column) continue;
      if ((p.a.row - q.a.row) * (p.b.row - q.b.row) < 0) total++;
    }
  return total;
}

function forwardPath(from: PlacedNode, to: PlacedNode, bend: number) {
  const x1 = from.x + NODE_WIDTH;
  const y1 = from.y + NODE_HEIGHT / 2;
  const x2 = to.x;
  const y2 = to.y + NODE_HEIGHT / 2;
  const mx = (x1 + x2) / 2;
  const my = (y1 + y2) / 2 + bend;
  return {
    path: `M ${x1} ${y1} C ${mx} ${y1 + bend}, ${mx} ${y2 + bend}, ${x2} ${y2}`,
    label: { x: mx, y: my },
  };
}

/** A back edge leaves the bottom of its box and enters the bottom of its target, dipping below both. */
function backPath(from: PlacedNode, to: PlacedNode, bend: number) {
  if (from.key === to.key) {
    const x = from.x + NODE_WIDTH / 2;
    const y = from.y;
    const lift = 30 + bend;
    return {
      path: `M ${x - 24} ${y} C ${x - 40} ${y - lift}, ${x + 40} ${y - lift}, ${x + 24} ${y}`,
      label: { x, y: y - lift * 0.75 },
    };
  }
  const x1 = from.x + NODE_WIDTH / 2;
  const y1 = from.y + NODE_HEIGHT;
  const x2 = to.x + NODE_WIDTH / 2;
  const y2 = to.y + NODE_HEIGHT;
  const low = Math.max(y1, y2) + GAP_Y * 0.8 + bend;
  return {
    path: `M ${x1} ${y1} C ${x1} ${low}, ${x2} ${low}, ${x2} ${y2}`,
    label: { x: (x1 + x2) / 2, y: low - GAP_Y * 0.2 },
  };
}

export function layout(nodes: LayoutNodeIn[], edges: LayoutEdgeIn[], entry?: string): Layout {
  const known = new Set(nodes.map((n) => n.key));
  // An edge to or from a node that is not drawn (being edited away) is left out of the picture.
  const drawable = edges.filter((e) => known.has(e.from) && known.has(e.to));
  const back = backEdges(nodes, drawable, entry);
  const forward = drawable.filter((e) => !back.has(e.key));
  const column = columns(nodes, forward);
  const ordered = orderColumns(nodes, forward, column);
  const placed = new Map<string, PlacedNode>();
  for (const [c, keys] of ordered.entries())
    for (const [r, key] of keys.entries())
      placed.set(key, {
        key,
        column: c,
        row: r,
        x: PAD + c * (NODE_WIDTH + GAP_X),
        y: PAD + r * (NODE_HEIGHT + GAP_Y),
      });
  // Parallel edges (same ends, same kind) bend apart so each keeps its own label.
  const seen = new Map<string, number>();
  const placedEdges = drawable.map((edge): PlacedEdge => {
    const isBack = back.has(edge.key);
    const pair = `${edge.from}>${edge.to}>${isBack}`;
    const nth = seen.get(pair) ?? 0;
    seen.set(pair, nth + 1);
    const from = placed.get(edge.from)!;
    const to = placed.get(edge.to)!;
    const bend = nth * 22;
    const shape = isBack ? backPath(from, to, bend) : forwardPath(from, to, bend);
    return { key: edge.key, from: edge.from, to: edge.to, back: isBack, ...shape };
  });
  const columnsUsed = Math.max(1, ordered.length);
  const rowsUsed = Math.max(1, ...ordered.map((keys) => keys.length));
  const extra = Math.max(
    0,
    ...placedEdges.map((e) => (e.back ? GAP_Y + 22 * (seen.get(`${e.from}>${e.to}>true`) ?? 0) : 0)),
  );
  return {
    nodes: placed,
    edges: placedEdges,
    width: PAD * 2 + columnsUsed * NODE_WIDTH + (columnsUsed - 1) * GAP_X,
    height: PAD * 2 + rowsUsed * NODE_HEIGHT + (rowsUsed - 1) * GAP_Y + extra,
  };
}
