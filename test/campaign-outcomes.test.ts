/**
 * Where an attempt's outcome takes its contact (campaigns/outcomes.ts `nextStep`): pure, so every
 * branch is pinned here; the executor tests prove the same rules end to end.
 */
import { describe, expect, it } from 'vitest';
import { nextStep } from '../src/domains/campaigns/execution/outcomes.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const campaign = {
  status: 'running' as const,
  campaignType: 'call' as const,
  maxAttempts: 3,
  retryDelayMinutes: 10,
  smsMessageTemplate: null as string | null,
};
const call = { channel: 'call' };

describe('nextStep', () => {
  it('a completed or skipped attempt finishes its contact so', () => {
    expect(nextStep(campaign, { attempts: 1 }, call, { status: 'completed' }, NOW)).toEqual({
      next: 'completed',
      retryAt: null,
    });
    expect(nextStep(campaign, { attempts: 1 }, call, { status: 'skipped' }, NOW)).toEqual({
      next: 'skipped',
      retryAt: null,
    });
  });

  it('a failed attempt with attempts left waits retry_delay_minutes, paused campaigns too', () => {
    for (const status of ['running', 'paused'] as const)
      expect(nextStep({ ...campaign, status }, { attempts: 2 }, call, { status: 'no_answer' }, NOW)).toEqual({
        next: 'pending',
        retryAt: new Date(NOW + 10 * 60_000),
      });
  });

  it('fails the contact when no attempt is left, or the campaign is over', () => {
    expect(nextStep(campaign, { attempts: 3 }, call, { status: 'busy' }, NOW).next).toBe('failed');
    expect(
      nextStep({ ...campaign, status: 'cancelled' as never }, { attempts: 1 }, call, { status: 'busy' }, NOW)
        .next,
    ).toBe('failed');
  });

  it('a mixed campaign whose calls did not connect sends its SMS next, at once', () => {
    const mixed = { ...campaign, campaignType: 'mixed' as const, smsMessageTemplate: 'Hi {{name}}' };
    expect(nextStep(mixed, { attempts: 3 }, call, { status: 'no_answer' }, NOW)).toEqual({
      next: 'pending',
      retryAt: null,
    });
    // …but its SMS, once sent and failed, is not retried, and without a template there is no SMS.
    expect(nextStep(mixed, { attempts: 3 }, { channel: 'sms' }, { status: 'failed' }, NOW).next).toBe(
      'failed',
    );
    expect(
      nextStep({ ...mixed, smsMessageTemplate: null }, { attempts: 3 }, call, { status: 'failed' }, NOW).next,
    ).toBe('failed');
  });

  it('an SMS campaign retries its messages; a mixed campaign never retries an SMS', () => {
    const sms = { ...campaign, campaignType: 'sms' as const };
    expect(nextStep(sms, { attempts: 1 }, { channel: 'sms' }, { status: 'failed' }, NOW).next).toBe(
      'pending',
    );
    const mixed = { ...campaign, campaignType: 'mixed' as const, smsMessageTemplate: 'x' };
    expect(nextStep(mixed, { attempts: 1 }, { channel: 'sms' }, { status: 'failed' }, NOW).next).toBe(
      'failed',
    );
  });
});
