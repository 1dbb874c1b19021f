/**
 * The graph routing engine (domains/graphs/engine.ts) and its condition language (expressions.ts and
 * its expression-*.ts parts): pure functions, no database. Decisions §5; docs/graphs.md "Conditions" and "How routing decides".
 */
import { describe, expect, it } from 'vitest';
import { applyContextUpdate, CONTEXT_TOOL, ContextUpdateError } from '../src/domains/graphs/context.js';
import { decideNext, entryNode, words } from '../src/domains/graphs/engine.js';
import type {
  Classifier,
  EngineDeps,
  EngineEdge,
  EngineGraph,
  SessionState,
} from '../src/domains/graphs/engine-types.js';
import { evaluate } from '../src/domains/graphs/expression-eval.js';
import { ExpressionError } from '../src/domains/graphs/expression-lexer.js';
import {
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  parseExpression,
} from '../src/domains/graphs/expression-parser.js';
import { validateExpression } from '../src/domains/graphs/expressions.js';
import { at, edge, node, state } from './support/graph-fixtures.js';

/** Node 1 (entry) → nodes 2 (standard), 3 (exit), 4 (escalation), 5 (standard). */
function graph(edges: EngineEdge[]): EngineGraph {
  return {
    nodes: [
      node(1, 'entry'),
      node(2),
      node(3, 'exit'),
      node(4, 'escalation', { transfer_number: '+14155552671' }),
      node(5),
    ],
    edges,
  };
}

const deps = (fields: Partial<EngineDeps> = {}): EngineDeps => ({ now: () => at(0), ...fields });

describe('intent: whole words or phrases, case-insensitive', () => {
  it.each([
    ['billing', 'I have a billing question', true],
    ['bill', 'a question about billing', false],
    ['bill', 'my bill, please', true],
    ['bill', 'Bill.', true],
    ['BILLING', 'billing', true],
    ['billing', 'BILLING!!!', true],
    ['agent', 'agents', false],
    ['talk to a human', 'can I   talk to a\tHUMAN?', true],
    ['talk to a human', 'talk to human', false],
    ['talk to a human', 'a human to talk to', false],
    ['refund, cancel', 'I want to cancel.', true],
    ['refund, cancel', 'cancellation', false],
    [' , refund ,, ', '(refund)', true],
    ['café', 'Le CAFÉ est fermé', true],
    ['café', 'la cafétéria', false],
    ['cafe\u0301', 'un café', true],
    ['e-mail', 'send an e-mail', true],
    ["don't", 'I don’t know', true],
    ['no', "I don't know", false],
    ['covid 19', 'about COVID-19 rules', true],
    ['ja', 'Ja, bitte', true],
    ['über', 'ÜBER uns', true],
    ['billing', '', false],
  ])('pattern %j in %j → %s', async (pattern, utterance, expected) => {
    const decision = await decideNext(
      graph([edge(1, { intentPattern: pattern })]),
      state(),
      utterance,
      deps(),
    );
    expect(decision.edge?.id ?? null).toBe(expected ? 1 : null);
    expect(decision.evaluated).toEqual([{ edgeId: 1, matched: expected, reason: expect.any(String) }]);
  });

  it('says which keyword matched, or that none did', async () => {
    const g = graph([edge(1, { intentPattern: 'refund, billing,invoice' })]);
    const yes = await decideNext(g, state(), 'Billing please', deps());
    expect(yes.reason).toBe("intent: matched 'billing'");
    const no = await decideNext(g, state(), 'hello', deps());
    expect(no.evaluated[0]!.reason).toBe("intent: none of 'refund', 'billing', 'invoice' occurred");
    expect(no.reason).toBe('no edge matched (1 tried)');
  });

  it('an empty pattern or one of punctuation only never matches', async () => {
    for (const intentPattern of [null, '', ' , ,', '!!!']) {
      const decision = await decideNext(graph([edge(1, { intentPattern })]), state(), 'anything !!!', deps());
      expect(decision.edge).toBeNull();
      expect(decision.evaluated[0]!.reason).toBe('intent: the pattern names no keyword');
    }
  });

  it('splits text into lower-case words', () => {
    expect(words('Hello,  WORLD! It’s e-mail #42')).toEqual(['hello', 'world', "it's", 'e', 'mail', '42']);
  });
});

describe('expressions: parse and evaluate', () => {
  const vars = {
    call_duration: 75,
    turn_count: 3,
    customer: { tier: 'gold', age: 42, verified: true, nested: { deep: 'x' }, tags: ['vip', 'beta'] },
    score: '17',
    empty: null,
    zero: 0,
  };
  it.each<[string, unknown]>([
    ['call_duration > 60', true],
    ['call_duration >= 75 and call_duration < 76', true],
    ['call_duration / 60 > 1', true],
    ['(call_duration + 5) * 2 == 160', true],
    ['call_duration % 10 == 5', true],
    ['-call_duration < 0', true],
    ['2 + 3 * 4 == 14', true],
    ['(2 + 3) * 4 == 20', true],
    ['10 - 4 - 3 == 3', true],
    ['turn_count > 5 or call_duration > 60', true],
    ['turn_count > 5 || call_duration > 600', false],
    ['turn_count > 1 && call_duration > 60', true],
    ['not turn_count > 5', true],
    ['!(turn_count == 3)', false],
    ['NOT (turn_count == 3) OR TRUE', true],
    ["customer.tier == 'gold'", true],
    ['customer.tier == "gold"', true],
    ["customer.tier != 'gold'", false],
    ["customer.tier == 'Gold'", false],
    ['customer.age > 40', true],
    ["customer.age == '42'", true],
    ['score > 10', true],
    ['score == 17', true],
    ["score == '17'", true],
    ['customer.verified == true', true],
    ['customer.nested.deep == "x"', true],
    ["customer.tier in ['gold', 'platinum']", true],
    ["customer.tier in ['silver']", false],
    ["customer.tier not in ['silver']", true],
    ['customer.age in [41, 42]', true],
    ["'vip' in customer.tags", true],
    ["'gold' in customer.tags", false],
    ["'ol' in customer.tier", true],
    ["'a' in ['a', 'b']", true],
    ['3 in [1, 1 + 2]', true],
    ['exists(customer.tier)', true],
    ['customer.tier exists', true],
    ['exists(customer.phone)', false],
    ['customer.phone exists', false],
    ['not exists(customer.phone)', true],
    ['exists(empty)', false],
    ['empty == null', true],
    ['exists(zero)', true],
    // Missing values: every comparison is false, `in` too.
    ['missing == 1', false],
    ['missing != 1', false],
    ['missing > 1', false],
    ["missing in ['a']", false],
    ["missing not in ['a']", false],
    ["'a' in missing", false],
    ['missing.deeper == 1', false],
    ['customer.tier.length == 4', false],
    // Division by zero: no value, so never true.
    ['call_duration / 0 > 1', undefined],
    ['call_duration % zero == 0', undefined],
    ['not (call_duration / 0 > 1)', undefined],
    ['true or call_duration / 0 > 1', true],
    // Arithmetic on non-numbers has no value.
    ['customer.tier + 1 == 1', false],
    ['customer.tier > 1', false],
    ["customer.tier < 'h'", true],
    ['call_duration + 1', 76],
    ['1.5e2 == 150', true],
    ['-2 < -1', true],
  ])('%s → %j', (source, expected) => {
    expect(evaluate(parseExpression(source), vars)).toBe(expected);
  });

  it('reads unicode names', () => {
    expect(evaluate(parseExpression('kunde.größe >= 2'), { kunde: { größe: 3 } })).toBe(true);
  });
});

describe('expressions: errors carry their position', () => {
  it.each([
    ['', 'the expression is empty', 0],
    ['call_duration >', 'unexpected end of the expression', 15],
    ['call_duration = 60', "use '==' to compare, not '='", 14],
    ['(a > 1', "expected ')' to close the '(' at 0, found the end of the expression", 6],
    ['a > 1)', "unexpected ')'; expected an operator or the end", 5],
    ["a == 'open", 'unterminated string', 5],
    ['a # 1', "unexpected character '#'", 2],
    ['a & b', "use '&&' (or 'and' / 'or')", 2],
    ['1 < a < 3', "comparisons cannot be chained; join them with 'and'", 6],
    ['[1, 2] == a', "a list [...] may only follow 'in'", 0],
    ['a in [1 2]', "expected ',' or ']' in the list, found the number 2", 8],
    ['max(a, b) > 1', "unknown function 'max' (the only function is exists(name))", 3],
    ['exists(1)', 'exists(...) takes a name, found the number 1', 7],
    ['exists > 1', "'exists' needs a name: exists(customer.tier)", 0],
    ['1 exists', "'exists' applies to a name, e.g. customer.tier exists", 2],
    ['a. > 1', "expected a name after '.', found '>'", 3],
    ['12abc > 1', "unexpected 'a' after the number 12", 2],
    ['a > and', "unexpected keyword 'and'", 4],
  ])('%j: %s at %i', (source, message, position) => {
    let error: unknown;
    try {
      parseExpression(source);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ExpressionError);
    expect((error as ExpressionError).message).toBe(message);
    expect((error as ExpressionError).position).toBe(position);
  });

  it('limits length and nesting', () => {
    const long = `a == ${'1'.repeat(MAX_EXPRESSION_LENGTH)}`;
    expect(() => parseExpression(long)).toThrow(`longer than ${MAX_EXPRESSION_LENGTH} characters`);
    const deep = `${'('.repeat(MAX_EXPRESSION_DEPTH + 1)}a${')'.repeat(MAX_EXPRESSION_DEPTH + 1)} > 1`;
    expect(() => parseExpression(deep)).toThrow(/nested too deeply/);
    const fine = `${'('.repeat(MAX_EXPRESSION_DEPTH)}a${')'.repeat(MAX_EXPRESSION_DEPTH)} > 1`;
    expect(evaluate(parseExpression(fine), { a: 2 })).toBe(true);
    expect(() => parseExpression(`${'-'.repeat(40)}a > 1`)).toThrow(/nested too deeply/);
  });
});

describe('validateExpression', () => {
  it.each([
    ['mathematical', 'call_duration > 60', null],
    ['mathematical', 'call_duration / turn_count >= 20 and customer.score > 3', null],
    ['mathematical', 'true', null],
    [
      'mathematical',
      'call_duration + 1',
      {
        message: "a mathematical condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'",
        position: 14,
      },
    ],
    [
      'mathematical',
      'call_duration',
      {
        message: "a mathematical condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'",
        position: 0,
      },
    ],
    [
      'mathematical',
      'call_duration > 1 and turn_count',
      {
        message: "a mathematical condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'",
        position: 22,
      },
    ],
    ['mathematical', "'a' + 1 > 0", { message: 'arithmetic needs numbers, not "a"', position: 0 }],
    ['mathematical', 'call_duration >', { message: 'unexpected end of the expression', position: 15 }],
    ['state_variable', "customer.tier == 'gold'", null],
    ['state_variable', "tier in ['a', 'b'] and exists(customer.id)", null],
    ['state_variable', 'not exists(customer.id) or balance < -5', null],
    [
      'state_variable',
      'customer.verified',
      {
        message: "a state_variable condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'",
        position: 0,
      },
    ],
    [
      'state_variable',
      'true',
      {
        message: "a state_variable condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists'",
        position: 0,
      },
    ],
    [
      'state_variable',
      'balance + 5 > 10',
      {
        message:
          "arithmetic ('+') is not allowed in a state_variable condition; use a mathematical condition",
        position: 8,
      },
    ],
    [
      'state_variable',
      '-balance > 10',
      {
        message:
          "arithmetic ('-') is not allowed in a state_variable condition; use a mathematical condition",
        position: 0,
      },
    ],
    ['state_variable', 'a = 1', { message: "use '==' to compare, not '='", position: 2 }],
  ] as const)('%s %j → %j', (kind, source, expected) => {
    expect(validateExpression(kind, source)).toEqual(expected);
  });
});

describe('expressions are not code', () => {
  it.each([
    ["constructor.constructor('x')()", /unknown function 'constructor.constructor'/],
    ['process.exit(1)', /unknown function 'process.exit'/],
    ["a['constructor']", /may only follow 'in'|unexpected/],
    ['this.x == 1', null],
    ['a; b', /unexpected character ';'/],
    ['`x` == 1', /unexpected character '`'/],
  ])('%j', (source, error) => {
    if (error) expect(() => parseExpression(source)).toThrow(error);
    else expect(evaluate(parseExpression(source), {})).toBe(false);
  });

  it('reads only own data: prototype names are missing', () => {
    const vars = { a: { b: 1 }, s: 'text', list: [1, 2], fn: () => 1 };
    for (const source of [
      '__proto__ exists',
      'constructor exists',
      'a.constructor exists',
      'a.__proto__ exists',
      'a.hasOwnProperty exists',
      's.length exists',
      'list.length exists',
      'toString exists',
      'fn exists',
    ]) {
      expect(evaluate(parseExpression(source), vars), source).toBe(false);
    }
    expect(evaluate(parseExpression('__proto__.polluted == 1'), vars)).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('decideNext: mathematical and state_variable', () => {
  it('reads call_duration, turn_count, node_turn_count, time_in_node and context values', async () => {
    const g = graph([
      edge(1, { conditionType: 'mathematical', mathematicalExpression: 'call_duration > 60' }),
    ]);
    const early = await decideNext(g, state(), 'hi', deps({ now: () => at(30) }));
    expect(early.edge).toBeNull();
    expect(early.evaluated[0]!.reason).toBe('mathematical: call_duration > 60 was false (call_duration=30)');
    const late = await decideNext(g, state(), 'hi', deps({ now: () => at(75) }));
    expect(late.toNodeId).toBe(2);
    expect(late.reason).toBe('mathematical: call_duration > 60 was true (call_duration=75)');
  });

  it.each([
    // The utterance being routed counts: turn_count = state.turnCount + 1.
    ['turn_count == 1', {}, true],
    ['turn_count == 3', { turnCount: 2 }, true],
    ['node_turn_count >= 2', { turnCount: 5, nodeTurnCount: 1 }, true],
    ['node_turn_count >= 2', { turnCount: 5, nodeTurnCount: 0 }, false],
    ['time_in_node > 20', { nodeEnteredAt: at(30) }, true],
    ['time_in_node > 20', { nodeEnteredAt: at(45) }, false],
    ['call_duration - time_in_node == 30', { nodeEnteredAt: at(30) }, true],
    ['attempts * 2 >= 6', { context: { attempts: 3 } }, true],
    ['order.total > 100', { context: { order: { total: '150.5' } } }, true],
    // The metrics take precedence over context keys of the same name.
    ['call_duration == 60', { context: { call_duration: 1 } }, true],
  ])('%s with %j → %s', async (expression, fields, expected) => {
    const decision = await decideNext(
      graph([edge(1, { conditionType: 'mathematical', mathematicalExpression: expression })]),
      state(fields as Partial<SessionState>),
      'hi',
      deps({ now: () => at(60) }),
    );
    expect(decision.evaluated[0]!.matched).toBe(expected);
  });

  it.each([
    ["customer.tier == 'gold'", { customer: { tier: 'gold' } }, true],
    ["customer.tier in ['gold', 'platinum']", { customer: { tier: 'silver' } }, false],
    ['exists(customer.id)', { customer: { id: 7 } }, true],
    ['customer.id exists', {}, false],
    ["intent == 'billing' and not exists(escalated)", { intent: 'billing' }, true],
    // Metrics are not context: a state_variable condition does not see them.
    ['turn_count == 1', {}, false],
  ])('state_variable %s over %j → %s', async (condition, context, expected) => {
    const decision = await decideNext(
      graph([edge(1, { conditionType: 'state_variable', stateVariableCondition: condition })]),
      state({ context }),
      'hi',
      deps(),
    );
    expect(decision.evaluated[0]!.matched).toBe(expected);
  });

  it('reasons name each value read, or that it is missing', async () => {
    const decision = await decideNext(
      graph([
        edge(1, { conditionType: 'state_variable', stateVariableCondition: "tier == 'gold' and exists(id)" }),
      ]),
      state({ context: { tier: 'gold' } }),
      'hi',
      deps(),
    );
    expect(decision.reason).toBe('no edge matched (1 tried)');
    expect(decision.evaluated[0]!.reason).toBe(
      `state_variable: tier == 'gold' and exists(id) was false (tier="gold", id=missing)`,
    );
  });

  it('an invalid stored expression never throws: that edge does not match, the next is tried', async () => {
    const g = graph([
      edge(1, { conditionType: 'mathematical', mathematicalExpression: 'call_duration >> 5', priority: 1 }),
      edge(2, {
        conditionType: 'state_variable',
        stateVariableCondition: 'constructor.constructor("x")()',
        priority: 2,
      }),
      edge(3, { conditionType: 'mathematical', mathematicalExpression: 'call_duration + 1', priority: 3 }),
      edge(4, {
        conditionType: 'mathematical',
        mathematicalExpression: 'call_duration / 0 > 1',
        priority: 4,
      }),
      edge(5, { conditionType: 'mathematical', mathematicalExpression: null, priority: 5 }),
      edge(6, { conditionType: 'mathematical', mathematicalExpression: 'true', priority: 6, toNodeId: 5 }),
    ]);
    const decision = await decideNext(g, state(), 'hi', deps());
    expect(decision.toNodeId).toBe(5);
    expect(decision.evaluated.map((e) => [e.edgeId, e.matched, e.reason])).toEqual([
      [1, false, 'mathematical: invalid expression "call_duration >> 5": unexpected \'>\' at position 15'],
      [
        2,
        false,
        'state_variable: invalid expression "constructor.constructor(\\"x\\")()": unknown function \'constructor.constructor\' (the only function is exists(name)) at position 23',
      ],
      [
        3,
        false,
        "mathematical: invalid expression \"call_duration + 1\": a mathematical condition must be a comparison (==, !=, <, <=, >, >=), 'in' or 'exists' at position 14",
      ],
      [4, false, 'mathematical: call_duration / 0 > 1 divides by zero, so it is false (call_duration=0)'],
      [5, false, 'mathematical: the expression is empty'],
      [6, true, 'mathematical: true was true'],
    ]);
  });
});

describe('decideNext: order, activity, targets', () => {
  it('tries edges in ascending priority, ties by ascending edge id, and stops at the first match', async () => {
    const g = graph([
      edge(30, { intentPattern: 'help', priority: 2, toNodeId: 3 }),
      edge(20, { intentPattern: 'help', priority: 1, toNodeId: 4 }),
      edge(10, { intentPattern: 'help', priority: 1, toNodeId: 5 }),
      edge(5, { intentPattern: 'nothing', priority: 0, toNodeId: 2 }),
      edge(40, { intentPattern: 'help', priority: -1, fromNodeId: 2 }),
    ]);
    const decision = await decideNext(g, state(), 'help me', deps());
    expect(decision.edge?.id).toBe(10);
    expect(decision.toNodeId).toBe(5);
    expect(decision.evaluated.map((e) => [e.edgeId, e.matched])).toEqual([
      [5, false],
      [10, true],
    ]);
  });

  it('does not depend on the order edges are listed in', async () => {
    const edges = [1, 2, 3, 4].map((id) =>
      edge(id, { intentPattern: 'go', priority: id % 2, toNodeId: id + 1 }),
    );
    for (const list of [edges, [...edges].reverse()]) {
      expect((await decideNext(graph(list), state(), 'go', deps())).edge?.id).toBe(2);
    }
  });

  it('ignores inactive edges entirely', async () => {
    const g = graph([
      edge(1, { intentPattern: 'billing', isActive: false, toNodeId: 3 }),
      edge(2, { intentPattern: 'billing', priority: 5 }),
    ]);
    const decision = await decideNext(g, state(), 'billing', deps());
    expect(decision.edge?.id).toBe(2);
    expect(decision.evaluated.map((e) => e.edgeId)).toEqual([2]);
  });

  it('stays when no edge leaves the node, or the node is unknown', async () => {
    const g = graph([edge(1, { intentPattern: 'x', isActive: false })]);
    expect(await decideNext(g, state(), 'x', deps())).toEqual({
      edge: null,
      toNodeId: null,
      reason: 'no active edge leaves node 1',
      handoffSentence: null,
      ends: null,
      transferNumber: null,
      evaluated: [],
    });
    expect((await decideNext(g, state({ currentNodeId: 99 }), 'x', deps())).reason).toBe(
      'node 99 is not in the graph',
    );
  });

  it('an edge to a node that is not in the graph does not fire', async () => {
    const g = graph([
      edge(1, { intentPattern: 'x', toNodeId: 99 }),
      edge(2, { intentPattern: 'x', priority: 1 }),
    ]);
    const decision = await decideNext(g, state(), 'x', deps());
    expect(decision.edge?.id).toBe(2);
    expect(decision.evaluated[0]).toEqual({
      edgeId: 1,
      matched: false,
      reason: 'target node 99 is not in the graph',
    });
  });

  it.each([
    [2, null, null],
    [3, 'exit', null],
    [4, 'escalation', '+14155552671'],
  ])('reaching node %i ends %j, transfer number %j', async (toNodeId, ends, transferNumber) => {
    const decision = await decideNext(
      graph([edge(1, { intentPattern: 'go', toNodeId, handoffSentence: 'One moment.' })]),
      state(),
      'go',
      deps(),
    );
    expect(decision).toMatchObject({ toNodeId, ends, transferNumber, handoffSentence: 'One moment.' });
  });

  it('an escalation node without a transfer number still ends, with none', async () => {
    const g: EngineGraph = {
      nodes: [node(1, 'entry'), node(2, 'escalation')],
      edges: [edge(1, { intentPattern: 'go' })],
    };
    const decision = await decideNext(g, state(), 'go', deps());
    expect(decision).toMatchObject({ ends: 'escalation', transferNumber: null, handoffSentence: null });
  });
});

describe('decideNext: several condition fields and condition_logic', () => {
  const both = (conditionLogic: 'AND' | 'OR') =>
    graph([
      edge(1, {
        conditionType: 'intent',
        intentPattern: 'manager',
        mathematicalExpression: 'call_duration > 60',
        conditionLogic,
      }),
    ]);

  it.each([
    ['AND', 'get me a manager', 75, true],
    ['AND', 'get me a manager', 30, false],
    ['AND', 'hello', 75, false],
    ['OR', 'get me a manager', 30, true],
    ['OR', 'hello', 75, true],
    ['OR', 'hello', 30, false],
  ] as const)('%s: %j at %is → %s', async (logic, utterance, seconds, expected) => {
    const decision = await decideNext(both(logic), state(), utterance, deps({ now: () => at(seconds) }));
    expect(decision.evaluated[0]!.matched).toBe(expected);
  });

  it('the reason shows each condition, joined by the logic', async () => {
    const yes = await decideNext(both('AND'), state(), 'manager', deps({ now: () => at(75) }));
    expect(yes.reason).toBe(
      "intent: matched 'manager' AND mathematical: call_duration > 60 was true (call_duration=75)",
    );
    const no = await decideNext(both('AND'), state(), 'hi', deps({ now: () => at(75) }));
    expect(no.evaluated[0]!.reason).toBe("intent: none of 'manager' occurred AND 1 more not evaluated");
    const either = await decideNext(both('OR'), state(), 'hi', deps({ now: () => at(75) }));
    expect(either.reason).toBe(
      "intent: none of 'manager' occurred OR mathematical: call_duration > 60 was true (call_duration=75)",
    );
  });

  it('combines all four, asking the classifier last and only when needed', async () => {
    const calls: string[] = [];
    const classifier: Classifier = async ({ trigger }) => {
      calls.push(trigger);
      return true;
    };
    const g = (conditionLogic: 'AND' | 'OR') =>
      graph([
        edge(1, {
          conditionType: 'natural_language',
          naturalLanguageTrigger: 'the caller is upset',
          intentPattern: 'angry',
          mathematicalExpression: 'turn_count >= 1',
          stateVariableCondition: "tier == 'gold'",
          conditionLogic,
        }),
      ]);
    const context = { tier: 'gold' };
    expect(
      (await decideNext(g('AND'), state({ context }), 'I am angry', deps({ classifier }))).edge?.id,
    ).toBe(1);
    expect(calls).toEqual(['the caller is upset']);
    expect(
      (await decideNext(g('AND'), state({ context }), 'I am fine', deps({ classifier }))).edge,
    ).toBeNull();
    expect((await decideNext(g('OR'), state({ context }), 'I am fine', deps({ classifier }))).edge?.id).toBe(
      1,
    );
    expect(calls).toHaveLength(1);
  });

  it('the field of the condition type counts even when empty (false)', async () => {
    const g = (conditionLogic: 'AND' | 'OR') =>
      graph([edge(1, { conditionType: 'state_variable', intentPattern: 'yes', conditionLogic })]);
    expect((await decideNext(g('AND'), state(), 'yes', deps())).edge).toBeNull();
    const or = await decideNext(g('OR'), state(), 'yes', deps());
    expect(or.edge?.id).toBe(1);
    expect(or.reason).toBe("intent: matched 'yes' OR 1 more not evaluated");
    const and = await decideNext(g('AND'), state(), 'yes', deps());
    expect(and.evaluated[0]!.reason).toBe(
      "intent: matched 'yes' AND state_variable: the expression is empty",
    );
  });
});

describe('decideNext: natural_language', () => {
  const g = graph([
    edge(1, { conditionType: 'natural_language', naturalLanguageTrigger: 'wants to cancel' }),
  ]);

  it('passes the trigger, utterance, context and a signal; true fires, false does not', async () => {
    const seen: Array<Parameters<Classifier>[0]> = [];
    for (const answer of [true, false]) {
      const classifier: Classifier = async (input) => {
        seen.push(input);
        return answer;
      };
      const decision = await decideNext(g, state({ context: { a: 1 } }), 'stop it', deps({ classifier }));
      expect(decision.edge?.id ?? null).toBe(answer ? 1 : null);
      expect(decision.evaluated[0]!.reason).toBe(
        `natural_language: the classifier answered ${answer ? 'yes' : 'no'} to 'wants to cancel'`,
      );
    }
    expect(seen[0]).toMatchObject({ trigger: 'wants to cancel', utterance: 'stop it', context: { a: 1 } });
    expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
  });

  it.each<[string, Classifier, string]>([
    [
      'rejects',
      async () => {
        throw new Error('model unavailable');
      },
      'natural_language: the classifier failed (model unavailable)',
    ],
    [
      'throws synchronously',
      (() => {
        throw new Error('boom');
      }) as unknown as Classifier,
      'natural_language: the classifier failed (boom)',
    ],
    [
      'answers a non-boolean',
      async () => 'yes' as unknown as boolean,
      "natural_language: the classifier answered no to 'wants to cancel'",
    ],
  ])('a classifier that %s counts as false', async (_, classifier, reason) => {
    const decision = await decideNext(g, state(), 'x', deps({ classifier }));
    expect(decision.edge).toBeNull();
    expect(decision.evaluated[0]!.reason).toBe(reason);
  });

  it('without a classifier the condition is false', async () => {
    const decision = await decideNext(g, state(), 'x', deps());
    expect(decision.evaluated[0]!.reason).toBe('natural_language: no classifier available');
  });

  it('gives up at the time limit, aborts the signal and returns quickly', async () => {
    let signal: AbortSignal | undefined;
    const slow: Classifier = (input) =>
      new Promise((resolve) => {
        signal = input.signal;
        const timer = setTimeout(() => resolve(true), 1000);
        input.signal.addEventListener('abort', () => clearTimeout(timer));
      });
    const started = performance.now();
    const decision = await decideNext(g, state(), 'x', deps({ classifier: slow, classifierTimeoutMs: 30 }));
    const elapsed = performance.now() - started;
    expect(decision.edge).toBeNull();
    expect(decision.evaluated[0]!.reason).toBe('natural_language: the classifier timed out after 30 ms');
    expect(signal?.aborted).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(25);
    expect(elapsed).toBeLessThan(500);
  });

  it('does not wait for a classifier that ignores the signal, and tries the next edge', async () => {
    const deaf: Classifier = () => new Promise((resolve) => setTimeout(() => resolve(true), 1000).unref());
    const g2 = graph([
      edge(1, { conditionType: 'natural_language', naturalLanguageTrigger: 'anything' }),
      edge(2, { intentPattern: 'x', priority: 1, toNodeId: 3 }),
    ]);
    const started = performance.now();
    const decision = await decideNext(g2, state(), 'x', deps({ classifier: deaf, classifierTimeoutMs: 30 }));
    expect(performance.now() - started).toBeLessThan(500);
    expect(decision).toMatchObject({ toNodeId: 3, ends: 'exit' });
  });
});

describe('entryNode', () => {
  it('is the one entry node, or null when there is none or several', () => {
    expect(entryNode(graph([]))?.id).toBe(1);
    expect(entryNode({ nodes: [node(1), node(2)], edges: [] })).toBeNull();
    expect(entryNode({ nodes: [node(1, 'entry'), node(2, 'entry')], edges: [] })).toBeNull();
  });
});

describe('the context tool', () => {
  it('is an OpenAI-style function taking an updates object', () => {
    expect(CONTEXT_TOOL).toMatchObject({
      type: 'function',
      function: {
        name: 'update_context',
        parameters: { type: 'object', required: ['updates'], properties: { updates: { type: 'object' } } },
      },
    });
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>, Record<string, unknown>]>([
    ['adds keys', { a: 1 }, { b: 'x' }, { a: 1, b: 'x' }],
    ['replaces values', { a: 1 }, { a: 2 }, { a: 2 }],
    ['null removes a key', { a: 1, b: 2 }, { a: null }, { b: 2 }],
    ['removing a missing key is fine', { a: 1 }, { z: null, 'y.x': null }, { a: 1 }],
    [
      'merges nested objects',
      { c: { tier: 'gold', id: 1 } },
      { c: { tier: 'silver' } },
      { c: { tier: 'silver', id: 1 } },
    ],
    [
      'null removes nested keys',
      { c: { tier: 'gold', id: 1 } },
      { c: { id: null } },
      { c: { tier: 'gold' } },
    ],
    ['a dotted key is a path', { c: { id: 1 } }, { 'c.tier': 'gold' }, { c: { id: 1, tier: 'gold' } }],
    ['a dotted key creates objects', {}, { 'a.b.c': true }, { a: { b: { c: true } } }],
    ['a dotted null removes', { a: { b: 1, c: 2 } }, { 'a.b': null }, { a: { c: 2 } }],
    ['arrays replace', { tags: [1, 2] }, { tags: [3] }, { tags: [3] }],
    ['an object replaces a scalar', { a: 1 }, { a: { b: 2 } }, { a: { b: 2 } }],
    ['a scalar replaces an object', { a: { b: 2 } }, { a: 'x' }, { a: 'x' }],
    ['empty updates change nothing', { a: 1 }, {}, { a: 1 }],
  ])('%s', (_, context, updates, expected) => {
    const before = structuredClone(context);
    expect(applyContextUpdate(context, updates)).toEqual(expected);
    expect(context).toEqual(before);
  });

  it('refuses what is not plain JSON data or would pollute prototypes', () => {
    const bad: unknown[] = [
      null,
      'text',
      [1],
      JSON.parse('{"__proto__": {"polluted": true}}'),
      { 'a.__proto__.polluted': true },
      { constructor: { prototype: { polluted: true } } },
      { a: { b: JSON.parse('{"__proto__": 1}') } },
      { a: Number.NaN },
      { a: () => 1 },
      { a: new Date() },
      { 'a..b': 1 },
      { a: 'x'.repeat(70_000) },
      { '1.2.3.4.5.6.7.8.9.10.11': 1 },
    ];
    for (const updates of bad) {
      expect(() => applyContextUpdate({}, updates), JSON.stringify(updates)).toThrow(ContextUpdateError);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('feeds state_variable conditions', async () => {
    const context = applyContextUpdate({}, { 'customer.tier': 'gold' });
    const decision = await decideNext(
      graph([
        edge(1, { conditionType: 'state_variable', stateVariableCondition: "customer.tier == 'gold'" }),
      ]),
      state({ context }),
      'ok',
      deps(),
    );
    expect(decision.toNodeId).toBe(2);
  });
});
