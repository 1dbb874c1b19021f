/** The graph of docs/graphs.md's "Create a graph": the create body's example in the OpenAPI document. */
export const GRAPH_EXAMPLE = {
  name: 'Support line',
  description: 'Front desk, billing, and a human when asked',
  nodes: [
    { assistant_id: 1, node_type: 'entry', position: { x: 0, y: 0 } },
    { assistant_id: 2, node_type: 'standard', position: { x: 300, y: 0 } },
    { assistant_id: 3, node_type: 'exit', position: { x: 600, y: 0 } },
    {
      assistant_id: 1,
      node_type: 'escalation',
      position: { x: 300, y: 200 },
      configuration: { transfer_number: '+14155550100' },
    },
  ],
  edges: [
    {
      from_node_id: 0,
      to_node_id: 1,
      condition_type: 'intent',
      intent_pattern: 'billing, invoice, payment',
      handoff_sentence: 'Let me pass you to billing.',
    },
    {
      from_node_id: 0,
      to_node_id: 3,
      condition_type: 'intent',
      intent_pattern: 'human, agent, representative',
      priority: 1,
      handoff_sentence: 'Connecting you to a person.',
    },
    {
      from_node_id: 1,
      to_node_id: 3,
      condition_type: 'state_variable',
      state_variable_condition: "customer.tier == 'vip'",
    },
    {
      from_node_id: 1,
      to_node_id: 2,
      condition_type: 'intent',
      intent_pattern: 'bye, goodbye, that is all',
      priority: 1,
    },
    {
      from_node_id: 1,
      to_node_id: 2,
      condition_type: 'mathematical',
      mathematical_expression: 'call_duration > 600',
      priority: 2,
      description: 'Long billing calls wrap up',
    },
  ],
};
