/**
 * The keypad's tools, offered to the model when the assistant names them in
 * `tools_settings.enabled_tools`: `collect_digits` waits for the keys the caller presses ("enter your
 * account number followed by the pound key") and gives them to the model as the tool's result — they
 * never become a caller turn; `send_digits` plays keys to the other side (navigating a phone menu),
 * by the carrier's command or as tones in the audio (keypad.ts). Neither says a filler: the caller is
 * busy keying, and a phone menu has no use for one.
 */
import { ProviderError } from '../../providers/errors.js';
import type { CallTool, ToolOutcome } from './types.js';

export const KEYPAD_TOOLS = ['collect_digits', 'send_digits'] as const;

const MAX_DIGITS = 32;
const DEFAULT_TERMINATOR = '#';
const DEFAULT_TIMEOUT_SECONDS = 10;
const MAX_TIMEOUT_SECONDS = 60;
const SEND_DIGITS = /^[0-9*#A-Dw]{1,64}$/;

const failed = (reason: string): ToolOutcome => ({ ok: false, result: JSON.stringify({ error: reason }) });

export const collectDigits: CallTool = {
  definition: {
    name: 'collect_digits',
    description:
      'Waits for the caller to enter digits on their keypad (an account number, a PIN, a menu choice) ' +
      'and returns them. First tell the caller what to enter and how to finish (for example "followed ' +
      'by the pound key"), then call this tool.',
    parameters: {
      type: 'object',
      properties: {
        max_digits: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_DIGITS,
          description: 'How many digits to wait for at most; collection stops when they are in.',
        },
        terminator: {
          type: 'string',
          enum: ['#', '*', ''],
          description: 'The key that ends the entry (not included in the digits); "" for none. Default "#".',
        },
        timeout_seconds: {
          type: 'number',
          minimum: 1,
          maximum: MAX_TIMEOUT_SECONDS,
          description: `Seconds to wait for each key before giving up. Default ${DEFAULT_TIMEOUT_SECONDS}.`,
        },
      },
      required: ['max_digits'],
    },
  },
  filler: '',
  async run(args, context) {
    const maxDigits = args.max_digits ?? MAX_DIGITS;
    if (
      typeof maxDigits !== 'number' ||
      !Number.isInteger(maxDigits) ||
      maxDigits < 1 ||
      maxDigits > MAX_DIGITS
    )
      return failed(`max_digits must be a whole number from 1 to ${MAX_DIGITS}`);
    const terminator = args.terminator ?? DEFAULT_TERMINATOR;
    if (terminator !== '#' && terminator !== '*' && terminator !== '')
      return failed('terminator must be "#", "*" or ""');
    const timeoutSeconds = args.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS;
    if (typeof timeoutSeconds !== 'number' || !(timeoutSeconds >= 1 && timeoutSeconds <= MAX_TIMEOUT_SECONDS))
      return failed(`timeout_seconds must be from 1 to ${MAX_TIMEOUT_SECONDS}`);
    const digits = await context.call.collectDigits(
      { maxDigits, ...(terminator ? { terminator } : {}), timeoutMs: timeoutSeconds * 1000 },
      context.signal,
    );
    if (digits === null) return { ok: true, result: JSON.stringify({ digits: null, reason: 'timeout' }) };
    return { ok: true, result: JSON.stringify({ digits }) };
  },
};

export const sendDigits: CallTool = {
  definition: {
    name: 'send_digits',
    description:
      'Presses keys on the call, as a person would on their phone, to navigate an automated phone menu ' +
      '(IVR). Keys: 0-9, *, #, A-D; "w" waits half a second.',
    parameters: {
      type: 'object',
      properties: {
        digits: {
          type: 'string',
          pattern: SEND_DIGITS.source,
          description: 'The keys to press, in order, for example "1" or "1234#" or "2w5".',
        },
      },
      required: ['digits'],
    },
  },
  filler: '',
  async run(args, context) {
    const digits = args.digits;
    if (typeof digits !== 'string' || !SEND_DIGITS.test(digits))
      return failed('digits must be 1 to 64 of 0-9, *, #, A-D or w');
    try {
      await context.call.sendDigits(digits, context.signal);
    } catch (error) {
      return { ok: false, result: JSON.stringify({ sent: false, error: sendFailure(error) }) };
    }
    return { ok: true, result: JSON.stringify({ sent: digits }) };
  },
};

/** Why keys were not sent, in words the model can use (a carrier's own failure stays general). */
function sendFailure(error: unknown): string {
  if (error instanceof ProviderError)
    return error.code === 'invalid_digits' ? error.message : 'the carrier did not play the keys';
  return error instanceof Error ? error.message : 'the keys could not be sent';
}

/** The keypad tools among the names an assistant enabled, in the order it named them. */
export function keypadTools(enabled: readonly string[] | undefined): CallTool[] {
  const byName: Record<string, CallTool> = { collect_digits: collectDigits, send_digits: sendDigits };
  return [...new Set(enabled ?? [])].flatMap((name) => byName[name] ?? []);
}
