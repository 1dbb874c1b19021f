/**
 * The graph drawing's layout (console/src/pages/graphs/layout.ts), pure: columns by the longest path
 * from the entry, cycles found and drawn as back edges, one barycenter pass removing crossings, and
 * sizes that hold every box.
 */
import { describe, expect, it } from 'vitest';
import { backEdges, crossings, layout, NODE_HEIGHT, NODE_WIDTH } from '../console/src/pages/graphs/layout.js';

const nodes = (...keys: string[]) => keys.map((key) => ({ key }));
const edges = (...pairs: string[]) =>
  pairs.map((pair, i) => {
    const [from, to] = pair.split('>') as [string, string];
    return { key: `e${i}`, from, to };
  });

describe('graph layout', () => {
  it('puts each node in the column of its longest path from the entry', () => {
    // a → b → c, and a → c directly: c is two steps away by the longest path.
    const placed = layout(nodes('c', 'b', 'a'), edges('a>b', 'b>c', 'a>c'), 'a');
    expect(placed.nodes.get('a')!.column).toBe(0);
    expect(placed.nodes.get('b')!.column).toBe(1);
    expect(placed.nodes.get('c')!.column).toBe(2);
    expect(placed.nodes.get('c')!.x).toBeGreaterThan(placed.nodes.get('b')!.x);
    expect(placed.edges.every((e) => !e.back)).toBe(true);
  });

  it('finds the edges that close cycles, self-loops included, and draws them curved', () => {
    const list = edges('a>b', 'b>c', 'c>a', 'b>b');
    expect([...backEdges(nodes('a', 'b', 'c'), list, 'a')].sort()).toEqual(['e2', 'e3']);
    const placed = layout(nodes('a', 'b', 'c'), list, 'a');
    expect(placed.nodes.get('c')!.column).toBe(2);
    const back = placed.edges.filter((e) => e.back).map((e) => e.key);
    expect(back.sort()).toEqual(['e2', 'e3']);
    // The loop back to the entry dips below the boxes.
    const loop = placed.edges.find((e) => e.key === 'e2')!;
    expect(loop.label.y).toBeGreaterThan(placed.nodes.get('a')!.y + NODE_HEIGHT);
    expect(loop.path).toMatch(/^M .* C /);
  });

  it('starts the walk at the entry, so the cycle is broken where the conversation comes back', () => {
    // Listed first, b would be walked first and a→b would look like the back edge.
    const list = edges('b>a', 'a>b');
    expect([...backEdges(nodes('b', 'a'), list, 'a')]).toEqual(['e0']);
    const placed = layout(nodes('b', 'a'), list, 'a');
    expect(placed.nodes.get('a')!.column).toBe(0);
    expect(placed.nodes.get('b')!.column).toBe(1);
  });

  it('orders a column by its neighbours, removing the crossings of the given order', () => {
    // Column 1 is given as y, x, but a (row 0) leads to x and b (row 1) to y.
    const ns = nodes('a', 'b', 'y', 'x');
    const es = edges('a>x', 'b>y');
    const placed = layout(ns, es);
    expect(placed.nodes.get('x')!.row).toBe(0);
    expect(placed.nodes.get('y')!.row).toBe(1);
    expect(crossings(placed)).toBe(0);
    // Without the pass (one edge per node, as given) the order y, x would cross once.
    const unsorted = {
      ...placed,
      nodes: new Map(
        [...placed.nodes].map(([k, n]) => [k, { ...n, row: k === 'x' ? 1 : k === 'y' ? 0 : n.row }]),
      ),
    };
    expect(crossings(unsorted)).toBe(1);
  });

  it('sizes the drawing to hold every box, and leaves edges to missing nodes out', () => {
    const placed = layout(
      nodes('a', 'b', 'c', 'd'),
      [...edges('a>b', 'a>c', 'a>d'), { key: 'lost', from: 'a', to: 'z' }],
      'a',
    );
    expect(placed.edges.map((e) => e.key)).not.toContain('lost');
    for (const node of placed.nodes.values()) {
      expect(node.x + NODE_WIDTH).toBeLessThanOrEqual(placed.width);
      expect(node.y + NODE_HEIGHT).toBeLessThanOrEqual(placed.height);
    }
    expect(new Set([...placed.nodes.values()].map((n) => n.y)).size).toBe(3);
  });

  it('bends parallel edges apart and lays out an empty graph', () => {
    const placed = layout(nodes('a', 'b'), edges('a>b', 'a>b'), 'a');
    expect(placed.edges[0]!.label.y).not.toBe(placed.edges[1]!.label.y);
    const empty = layout([], []);
    expect(empty.nodes.size).toBe(0);
    expect(empty.width).toBeGreaterThan(0);
  });
});
