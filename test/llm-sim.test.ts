/**
 * The language model simulator (src/sim/llm.ts) on the wire, read with plain fetch: what it accepts,
 * which reply it picks (a key's script, the '*' script, the respond hook, the default answer), and
 * the stream it writes (tool call arguments in several fragments by index, usage only when asked,
 * `[DONE]`). Its use through the adapter is in llm-openai.test.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LlmSimulator } from '../src/sim/llm.js';

describe('the simulator on the wire', () => {
  const sim = new LlmSimulator();
  let baseUrl = '';
  const post = (body: unknown, key?: string) =>
    fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
    });
  const dataOf = (text: string) =>
    text
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6));

  beforeAll(async () => {
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('with no key added accepts any key or none, and answers from the last user message', async () => {
    const response = await post({ model: 'm', messages: [{ role: 'user', content: 'I need a taxi.' }] });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]!.message.content).toBe('You said: I need a taxi. How else can I help?');
  });

  it('streams tool call arguments in several fragments by index, usage only when asked, then [DONE]', async () => {
    sim.setScript('*', [
      {
        toolCalls: [
          { name: 'a', arguments: { x: 'long enough value' } },
          { name: 'b', arguments: '{"y":2}' },
        ],
      },
      { text: 'Hi there.' },
    ]);
    const messages = [{ role: 'user', content: 'go' }];
    const first = dataOf(await (await post({ model: 'm', messages, stream: true })).text());
    expect(first.at(-1)).toBe('[DONE]');
    const chunks = first.slice(0, -1).map((d) => JSON.parse(d));
    const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    for (const index of [0, 1]) {
      const own = fragments.filter((f: { index: number }) => f.index === index);
      expect(own[0]!.id).toMatch(/^call_/);
      expect(own.length).toBeGreaterThan(2);
    }
    expect(chunks.some((c) => c.choices.length === 0)).toBe(false);

    const second = dataOf(
      await (
        await post({ model: 'm', messages, stream: true, stream_options: { include_usage: true } })
      ).text(),
    );
    const last = JSON.parse(second.at(-2)!);
    expect(last.choices).toEqual([]);
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
  });

  it("serves a key's own script before the '*' one, then the respond hook, and records what it was asked", async () => {
    sim.setScript('*', [{ text: 'For anyone.' }]);
    sim.setScript('sk-own', [{ text: 'Just for you.' }]);
    sim.respond((request) => ({ text: `Hook saw ${request.messages.length} message.` }));
    sim.pacing.wordsPerToken = 2;
    const contents = async (key: string) => {
      const text = await (
        await post({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }, key)
      ).text();
      return dataOf(text)
        .slice(0, -1)
        .map((d) => JSON.parse(d).choices[0]?.delta.content)
        .filter((c) => typeof c === 'string' && c !== '');
    };
    expect(await contents('sk-own')).toEqual(['Just for', ' you.']);
    expect(await contents('sk-own')).toEqual(['For anyone.']);
    expect(await contents('sk-own')).toEqual(['Hook saw', ' 1 message.']);
    expect(sim.requests.map((r) => [r.key, r.model, r.status, r.completed])).toEqual([
      ['sk-own', 'm', 200, true],
      ['sk-own', 'm', 200, true],
      ['sk-own', 'm', 200, true],
    ]);
  });

  it('hangs mid-answer when told to: some tokens, then an open, silent stream until the client leaves', async () => {
    sim.setScript('*', [{ text: 'One two three four.', stallAfterTokens: 2 }]);
    const response = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true });
    const reader = response.body!.getReader();
    let text = '';
    // The role chunk and two tokens come; then nothing, however long the client waits.
    while (!text.includes('" two"')) text += new TextDecoder().decode((await reader.read()).value);
    const more = await Promise.race([
      reader.read().then(() => 'more'),
      new Promise((resolve) => setTimeout(() => resolve('silent'), 300)),
    ]);
    expect(more).toBe('silent');
    expect(text).not.toContain('[DONE]');
    await reader.cancel();
    await expect.poll(() => sim.requests[0]?.disconnected).toBe(true);
    expect(sim.requests[0]?.completed).toBe(false);
  });

  it('once a key is added refuses others with 401 invalid_api_key, and refuses malformed bodies with 400', async () => {
    const keyed = new LlmSimulator();
    const keyedUrl = await keyed.start();
    keyed.addKey('sk-right-0001');
    try {
      const wrong = await fetch(`${keyedUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk-wrong-0002', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    } finally {
      await keyed.stop();
    }
    const malformed = await post({ model: 'm', messages: [] });
    expect(malformed.status).toBe(400);
  });
});
