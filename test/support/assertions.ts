/** Assertions shared by the route tests. */
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export interface Issue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/**
 * A 422 in FastAPI's envelope: every issue is exactly `{loc, msg, type}`, and one names `loc` (of
 * `type`, when given) with a message.
 */
export function expectValidation(
  response: LightMyRequestResponse,
  loc: Array<string | number>,
  type?: string,
) {
  expect(response.statusCode, response.body).toBe(422);
  const detail = response.json().detail as Issue[];
  expect(Array.isArray(detail), response.body).toBe(true);
  expect(detail.length).toBeGreaterThan(0);
  for (const each of detail) {
    expect(Object.keys(each).sort()).toEqual(['loc', 'msg', 'type']);
    expect(Array.isArray(each.loc)).toBe(true);
    expect(typeof each.msg).toBe('string');
    expect(typeof each.type).toBe('string');
  }
  const issue = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  expect(issue, `no issue at ${JSON.stringify(loc)} in ${response.body}`).toBeDefined();
  expect(issue?.msg.length).toBeGreaterThan(0);
  if (type) expect(issue?.type, response.body).toBe(type);
}

/** A `{detail: "<message>"}` error (and nothing else) with `status`. */
export function expectError(response: LightMyRequestResponse, status: number, detail?: RegExp): void {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json();
  expect(Object.keys(body)).toEqual(['detail']);
  expect(typeof body.detail).toBe('string');
  if (detail) expect(body.detail).toMatch(detail);
}
