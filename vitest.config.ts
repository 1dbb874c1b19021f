import { defineConfig } from 'vitest/config';

/**
 * Test files that measure time against the wall clock tightly enough that a loaded machine breaks
 * them: the SMS rate (arrival gaps at the carrier), the pairwise vendor matrix (twelve real-time
 * calls at once, each with a barge-in), the recording's length against the stream's (within
 * 80 ms over a call), and the SIP calls, whose far end (sipp) speaks on a fixed timeline that does
 * not wait for the platform (and the bridged transfer, which counts ringback frames in a 1.5 s ring), and
 * the browser tests (headless Chromium). They run last, one at a time, once the rest is done.
 */
const ALONE = [
  'test/sms.test.ts',
  'test/sms-drain-rate.test.ts',
  'test/voice-matrix.test.ts',
  'test/voice-recording.test.ts',
  'test/sip-calls.test.ts',
  'test/sip-inbound.test.ts',
  'test/sip-transfer-bridge.test.ts',
  // Real Chromium: each browser takes a core for itself, and the Talk page holds a real-time
  // conversation; beside three other files it starved them (a 100,000-row import timed out).
  'test/console-account.test.ts',
  'test/console-numbers.test.ts',
  'test/console-journey.test.ts',
  'test/console-graphs.test.ts',
  'test/console-campaigns.test.ts',
  'test/console-talk-audio.test.ts',
  'test/console-assistant-editor.test.ts',
  'test/console-calls.test.ts',
];

/**
 * The rest runs three files at a time. Most files wait on the wall clock (a live call is real time,
 * a durability test waits for a process to start again), so three workers keep two cores busy: the
 * suite's sum of file times is about 50 minutes, its wall time about 24 (docs/development.md).
 */
const TOGETHER_WORKERS = 3;

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // Servers the tests start as processes (npm start, the README's commands) take a free SIP port:
    // several run at once, and 5060 may be taken by the machine.
    env: { SIP_PORT: '0' },
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
    maxWorkers: TOGETHER_WORKERS,
    minWorkers: 1,
    projects: [
      {
        extends: true,
        test: {
          name: 'together',
          include: ['test/**/*.test.ts'],
          exclude: ALONE,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          // One process runs the project's files one after another.
          poolOptions: { forks: { singleFork: true } },
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
