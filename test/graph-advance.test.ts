/**
 * The graph engine's step (domains/graphs/engine.ts `advance`): the conversation after a decision.
 * Pure, no database; the decisions come from `decideNext` over a small graph, as in a call.
 */
import { describe, expect, it } from 'vitest';
import { advance, decideNext } from '../src/domains/graphs/engine.js';
import type { EngineGraph, SessionState } from '../src/domains/graphs/engine-types.js';
import { at, edge, node, state as sessionAt, T0 } from './support/graph-fixtures.js';

/** An intent edge from one node to another. */
const intent = (id: number, fromNodeId: number, toNodeId: number, intentPattern: string) =>
  edge(id, { fromNodeId, toNodeId, intentPattern });

/** Node 1 (entry) → 2 on "billing" (with a hand-off sentence), → 3 (exit) on "bye", → 4 (escalation) on "human". */
const GRAPH: EngineGraph = {
  nodes: [
    node(1, 'entry'),
    node(2),
    node(3, 'exit'),
    node(4, 'escalation', { transfer_number: '+14155552671' }),
  ],
  edges: [
    { ...intent(10, 1, 2, 'billing'), handoffSentence: 'Let me get billing.' },
    intent(11, 1, 3, 'bye'),
    intent(12, 1, 4, 'human'),
    intent(13, 2, 1, 'back'),
  ],
};

/** The session at the entry node, with a context the steps must carry along. */
const state = (fields: Partial<SessionState> = {}) => sessionAt({ context: { tier: 'gold' }, ...fields });

const decide = (from: SessionState, utterance: string, seconds: number) =>
  decideNext(GRAPH, from, utterance, { now: () => at(seconds) });

describe('advance', () => {
  it('counts the turn and stays when no edge fired', async () => {
    const before = state({ turnCount: 2, nodeTurnCount: 1 });
    const step = advance(before, await decide(before, 'hello', 30), at(30));
    expect(step).toEqual({
      state: { ...before, turnCount: 3, nodeTurnCount: 2 },
      transition: null,
      ends: null,
      transferNumber: null,
    });
  });

  it('moves along the edge that fired, entering the target at the given time', async () => {
    const before = state({ turnCount: 2, nodeTurnCount: 2, nodeEnteredAt: at(10) });
    const decision = await decide(before, 'a billing question', 30);
    const step = advance(before, decision, at(30));
    expect(step.state).toEqual({
      currentNodeId: 2,
      context: { tier: 'gold' },
      turnCount: 3,
      nodeTurnCount: 0,
      startedAt: T0,
      nodeEnteredAt: at(30),
    });
    expect(step.transition).toEqual({
      fromNodeId: 1,
      toNodeId: 2,
      edgeId: 10,
      reason: decision.reason,
      handoffSentence: 'Let me get billing.',
      at: at(30),
    });
    expect(step.ends).toBeNull();
  });

  it('says when the conversation ends: an exit node, or an escalation node with its number', async () => {
    const exit = advance(state(), await decide(state(), 'bye', 5), at(5));
    expect(exit).toMatchObject({ ends: 'exit', transferNumber: null, transition: { toNodeId: 3 } });
    const escalation = advance(state(), await decide(state(), 'a human please', 5), at(5));
    expect(escalation).toMatchObject({
      ends: 'escalation',
      transferNumber: '+14155552671',
      transition: { toNodeId: 4, edgeId: 12 },
    });
  });

  it('never enters a node earlier than the node it leaves was entered', async () => {
    const before = state({ nodeEnteredAt: at(60) });
    const step = advance(before, await decide(before, 'billing', 30), at(30));
    expect(step.state.nodeEnteredAt).toEqual(at(60));
    expect(step.transition!.at).toEqual(at(60));
  });

  it('leaves the state it was given unchanged', async () => {
    const before = state();
    const copy = structuredClone(before);
    advance(before, await decide(before, 'billing', 5), at(5));
    advance(before, await decide(before, 'hello', 5), at(5));
    expect(before).toEqual(copy);
  });

  it('chains: each step starts where the previous one left the conversation', async () => {
    let current = state();
    const path = [current.currentNodeId];
    for (const [seconds, utterance] of [
      [10, 'billing'],
      [20, 'still billing'],
      [30, 'go back'],
      [40, 'bye'],
    ] as const) {
      const step = advance(current, await decide(current, utterance, seconds), at(seconds));
      current = step.state;
      if (step.transition) path.push(step.transition.toNodeId);
      if (step.ends) break;
    }
    expect(path).toEqual([1, 2, 1, 3]);
    expect(current).toMatchObject({ turnCount: 4, nodeTurnCount: 0, nodeEnteredAt: at(40) });
  });
});
