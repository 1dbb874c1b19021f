/** The template language (lib/templates.ts): variables, filters, fallbacks, errors with positions, the sandbox. */
import { describe, expect, it } from 'vitest';
import { compileTemplate, renderTemplate, TemplateError, templateVariables } from '../src/lib/templates.js';

describe('rendering', () => {
  it.each([
    ['Hi {{name}}!', { name: 'Ada' }, 'Hi Ada!'],
    ['Hi {{ name }} from {{company}}', { name: 'Ada', company: 'Acme' }, 'Hi Ada from Acme'],
    ['{{ name | upper }}', { name: 'ada' }, 'ADA'],
    ['{{ name | lower }}', { name: 'ADA' }, 'ada'],
    ['{{ name | title_case }}', { name: "ada o'brien-smith" }, "Ada O'Brien-Smith"],
    ['{{ city | default("your city") }}', {}, 'your city'],
    ['{{ city | default("your city") }}', { city: '' }, 'your city'],
    ['{{ city | default("x") | upper }}', { city: 'paris' }, 'PARIS'],
    ['{{ phone | phone_format }}', { phone: '+14155552671' }, '(415) 555-2671'],
    ['{{ phone | phone_format("international") }}', { phone: '+14155552671' }, '+1 415 555 2671'],
    ['{{ phone | phone_format }}', { phone: 'not a number' }, 'not a number'],
    ['{{ custom.plan }}', { custom: { plan: 'gold' } }, 'gold'],
    ['{{ count }} items', { count: 3 }, '3 items'],
    ['{{ note | truncate(4) }}', { note: 'abcdefgh' }, 'abcd…'],
    ['no variables at all', {}, 'no variables at all'],
    ['{{ a | default("x|y, z") }}', {}, 'x|y, z'],
  ])('%s with %j → %s', (template, variables, expected) => {
    expect(renderTemplate(template, variables).text).toBe(expected);
  });

  it('fills missing variables from fallbacks, else renders them empty and reports them', () => {
    const result = renderTemplate(
      'Hello {{name}}, about {{topic}} at {{company}}',
      { name: 'Ada' },
      { topic: 'billing' },
    );
    expect(result.text).toBe('Hello Ada, about billing at ');
    expect(result.missing).toEqual(['company']);
    expect(result.used).toEqual({ name: 'Ada', topic: 'billing', company: null });
  });

  it('an empty value takes the fallback too; default() is not reported missing', () => {
    expect(renderTemplate('{{name}}', { name: '' }, { name: 'friend' }).text).toBe('friend');
    expect(renderTemplate('{{x | default("y")}}', {}).missing).toEqual([]);
  });

  it('reads only own properties of plain values: no prototype, constructor or functions', () => {
    expect(renderTemplate('{{ name.constructor }}{{ __proto__ }}{{ toString }}', { name: 'x' }).text).toBe(
      '',
    );
  });

  it('compiles once and renders many times', () => {
    const render = compileTemplate('Dear {{ name | title_case }}');
    expect(render({ name: 'ADA' }).text).toBe('Dear Ada');
    expect(render({ name: 'grace' }).text).toBe('Dear Grace');
  });

  it('lists the variables a template reads', () => {
    expect(templateVariables('{{a}} {{ b | upper }} {{a}} {{ c.d }}')).toEqual(['a', 'b', 'c.d']);
  });
});

describe('errors name the problem and its position', () => {
  it.each([
    ['Hi {{name', '"{{" is never closed', 3],
    ['Hi {{ }}', 'needs a variable name', 5],
    ['{{ 1abc }}', 'not a variable name', 2],
    ['{{ name | shout }}', 'Unknown filter "shout"', 9],
    ['{{ name | default(x) }}', 'quoted strings or numbers', 18],
    ['{{ name | default("x) }}', 'never closed', 22],
    ['{{ name.__proto__() }}', 'not a variable name', 2],
  ])('%s', (template, message, position) => {
    const error = (() => {
      try {
        renderTemplate(template, {});
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TemplateError);
    expect((error as TemplateError).message).toContain(message);
    expect((error as TemplateError).position).toBe(position);
  });
});
