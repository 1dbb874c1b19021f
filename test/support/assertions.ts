/** Assertions shared by the route tests. */
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export interface Issue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/** A 422 whose validation list names `loc` (and `type`, when given), with a message. */
export function expectValidation(
  response: LightMyRequestResponse,
  loc: Array<string | number>,
  type?: string,
) {
  expect(response.statusCode, response.body).toBe(422);
  const detail = response.json().detail as Issue[];
  expect(Array.isArray(detail), response.body).toBe(true);
  const issue = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  expect(issue, `no issue at ${JSON.stringify(loc)} in ${response.body}`).toBeDefined();
  expect(typeof issue?.msg).toBe('string');
  expect(issue?.msg.length).toBeGreaterThan(0);
  if (type) expect(issue?.type, response.body).toBe(type);
}
