/**
 * Mails a person can copy from: the verification and invitation mails, as written under
 * DATA_DIR/mail and as sent over SMTP, keep every link and token whole on one line (no
 * quoted-printable `=3D` or soft line break), carry the token on its own labelled line, and stay
 * valid RFC 5322 messages when names hold non-ASCII characters. Read from the raw bytes, never
 * through a decoder: the raw file is what a person opens.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeMail } from '../src/lib/mail.js';
import { SmtpSimulator } from '../src/sim/smtp.js';
import { Factories, uniqueEmail } from './support/factories.js';
import { useTestPlatform, waitFor } from './support/harness.js';

const PUBLIC_URL = 'http://switchboard.test';
const TOKEN = '[A-Za-z0-9_-]{40,}';

/** A raw message split at its first empty line; `newline` is how its lines end. */
function parse(raw: Buffer, newline: '\n' | '\r\n') {
  const text = raw.toString('utf8');
  const split = text.indexOf(`${newline}${newline}`);
  expect(split).toBeGreaterThan(0);
  const head = text.slice(0, split);
  const header = (key: string) => {
    // Unfolded: a continuation line starts with white space (RFC 5322 2.2.3).
    const unfolded = head.split(newline).reduce<string[]>((lines, line) => {
      if (/^[ \t]/.test(line) && lines.length > 0) lines[lines.length - 1] += line;
      else lines.push(line);
      return lines;
    }, []);
    const found = unfolded.find((line) => line.toLowerCase().startsWith(`${key.toLowerCase()}:`));
    return found?.slice(key.length + 1).trim() ?? '';
  };
  return { head, header, lines: text.slice(split + newline.length * 2).split(newline), text };
}

/** RFC 2047 encoded words (as nodemailer writes them: UTF-8, Q or B), decoded. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi, (_m, kind: string, data: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(data, 'base64').toString('utf8')
        : Buffer.from(
            data
              .replace(/_/g, ' ')
              .replace(/=([0-9A-F]{2})/gi, (_h, hex: string) =>
                String.fromCharCode(Number.parseInt(hex, 16)),
              ),
            'latin1',
          ).toString('utf8'),
    );
}

/** What every copyable mail must be: whole lines, declared unencoded, no line past RFC 5322's limit. */
function expectCopyable(raw: Buffer, newline: '\n' | '\r\n', encoding: '7bit' | '8bit') {
  const mail = parse(raw, newline);
  expect(mail.header('Content-Type')).toBe('text/plain; charset=utf-8');
  expect(mail.header('Content-Transfer-Encoding')).toBe(encoding);
  expect(mail.header('MIME-Version')).toBe('1.0');
  for (const key of ['From', 'To', 'Subject', 'Date', 'Message-ID']) expect(mail.header(key)).not.toBe('');
  // The header block is ASCII (non-ASCII goes in encoded words); no line is longer than 998 octets.
  expect(mail.head).toMatch(/^[\x20-\x7e\r\n\t]*$/);
  for (const line of mail.text.split(newline)) expect(Buffer.byteLength(line)).toBeLessThanOrEqual(998);
  expect(mail.lines.join('\n')).not.toMatch(/=3D|=\n/);
  if (newline === '\r\n') expect(mail.text.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
  return mail;
}

function lineMatching(lines: string[], pattern: RegExp): RegExpExecArray {
  for (const line of lines) {
    const match = pattern.exec(line);
    if (match) return match;
  }
  throw new Error(`No line matches ${pattern}:\n${lines.join('\n')}`);
}

describe('mails written under DATA_DIR/mail', () => {
  const t = useTestPlatform();
  let f: Factories;
  beforeAll(() => {
    f = new Factories(t);
  });

  const mailFile = (email: string, subject: RegExp) =>
    waitFor(() => t.mails().find((m) => m.to === email && subject.test(m.subject))).then((m) =>
      readFileSync(m.file),
    );

  async function register(email: string, firstName: string, organizationName?: string) {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: {
        email,
        password: 'a long password',
        first_name: firstName,
        last_name: 'Lovelace',
        ...(organizationName ? { organization_name: organizationName } : {}),
      },
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().access_token as string;
  }

  it('the verification mail holds its whole link on one line and the token on a labelled line; both verify', async () => {
    const email = uniqueEmail('copy');
    await register(email, 'Ada');
    const mail = expectCopyable(await mailFile(email, /Verify/), '\n', '7bit');

    const link = lineMatching(mail.lines, new RegExp(`^${PUBLIC_URL}/console/verify\\?token=(${TOKEN})$`));
    const labelled = lineMatching(mail.lines, new RegExp(`^Verification token: (${TOKEN})$`));
    expect(labelled[1]).toBe(link[1]);
    expect(mail.lines).toContain('Hello Ada,');

    // The copied token is the real one: the API takes it once.
    const verified = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/verify-email',
      payload: { token: labelled[1] },
    });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json().user).toMatchObject({ email, is_verified: true });
  });

  it('the invitation mail holds its whole link on one line and the token on a labelled line', async () => {
    const admin = await f.user({ organizationName: 'Analytical Engines' });
    const email = uniqueEmail('invitee');
    const invited = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/invite',
      headers: { authorization: `Bearer ${admin.accessToken}` },
      payload: { email, first_name: 'Grace', last_name: 'Hopper', role: 'user' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    const mail = expectCopyable(await mailFile(email, /invited/), '\n', '7bit');

    const link = lineMatching(mail.lines, new RegExp(`^${PUBLIC_URL}/api/v1/users/invitation/(${TOKEN})$`));
    const labelled = lineMatching(mail.lines, new RegExp(`^Invitation token: (${TOKEN})$`));
    expect(labelled[1]).toBe(link[1]);
    const consoleLink = lineMatching(
      mail.lines,
      new RegExp(`^${PUBLIC_URL}/console/invitation\\?token=(${TOKEN})$`),
    );
    expect(consoleLink[1]).toBe(link[1]);
    lineMatching(mail.lines, new RegExp(`^POST ${PUBLIC_URL}/api/v1/users/accept-invitation$`));

    const shown = await t.app.inject({ method: 'GET', url: `/api/v1/users/invitation/${link[1]}` });
    expect(shown.statusCode, shown.body).toBe(200);
    expect(shown.json()).toMatchObject({ organization_name: 'Analytical Engines', email });
  });

  it('names with non-ASCII characters give valid mails: encoded-word headers, an 8bit UTF-8 text', async () => {
    const email = uniqueEmail('zoe');
    const accessToken = await register(email, 'Zoë', 'Café Ça Va');
    const verification = expectCopyable(await mailFile(email, /Verify/), '\n', '8bit');
    expect(verification.lines).toContain('Hello Zoë,');
    lineMatching(verification.lines, new RegExp(`^${PUBLIC_URL}/console/verify\\?token=${TOKEN}$`));
    const token = lineMatching(verification.lines, new RegExp(`^Verification token: (${TOKEN})$`))[1];
    const verified = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/verify-email',
      payload: { token },
    });
    expect(verified.statusCode, verified.body).toBe(200);

    const invitee = uniqueEmail('soren');
    const invited = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/invite',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { email: invitee, first_name: 'Søren', last_name: 'Kierkegaard', role: 'admin' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    const invitation = expectCopyable(await mailFile(invitee, /=\?UTF-8\?|invited/), '\n', '8bit');
    expect(invitation.header('Subject')).toMatch(/^=\?UTF-8\?[QB]\?/);
    expect(decodeWords(invitation.header('Subject'))).toBe('You are invited to Café Ça Va on Switchboard');
    expect(invitation.lines).toContain('Hello Søren,');
    expect(invitation.text).toContain('Zoë Lovelace invited you to join Café Ça Va on Switchboard as admin.');
    lineMatching(invitation.lines, new RegExp(`^Invitation token: ${TOKEN}$`));
  });
});

describe('mails sent over SMTP', () => {
  const smtp = new SmtpSimulator();
  let port: number;
  // The simulator's hooks come first: it starts before the platform and stops after it has closed.
  beforeAll(async () => {
    port = await smtp.start();
  });
  afterAll(() => smtp.stop());
  const t = useTestPlatform(() => ({ SMTP_URL: `smtp://127.0.0.1:${port}` }));

  it('carry the link and the token whole, in CRLF lines, to the envelope recipient', async () => {
    const email = uniqueEmail('smtp');
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { email, password: 'a long password', first_name: 'Zoë', last_name: 'Lovelace' },
    });
    expect(response.statusCode, response.body).toBe(201);
    const received = await waitFor(() => smtp.received.find((m) => m.to.includes(email)));
    expect(received.to).toEqual([email]);
    expect(received.from).toBe('no-reply@switchboard.local');
    const mail = expectCopyable(Buffer.from(received.data), '\r\n', '8bit');
    expect(mail.header('To')).toBe(email);
    expect(mail.lines).toContain('Hello Zoë,');
    const link = lineMatching(mail.lines, new RegExp(`^${PUBLIC_URL}/console/verify\\?token=(${TOKEN})$`));
    expect(lineMatching(mail.lines, new RegExp(`^Verification token: (${TOKEN})$`))[1]).toBe(link[1]);
  });
});

describe('composeMail', () => {
  it('falls back to quoted-printable for a line past 998 octets, which must not be sent bare', async () => {
    const long = `${'y'.repeat(1200)}`;
    const composed = await composeMail(
      'Switchboard <no-reply@switchboard.local>',
      { to: 'a@example.com', subject: 'Long', text: `Hello,\n${long}\n` },
      '\n',
    );
    const mail = parse(composed.raw, '\n');
    expect(mail.header('Content-Transfer-Encoding')).toBe('quoted-printable');
    for (const line of mail.lines) expect(line.length).toBeLessThanOrEqual(76);
    expect(mail.lines.join('\n').replace(/=\n/g, '')).toContain(long);
    expect(composed.envelope).toEqual({ from: 'no-reply@switchboard.local', to: ['a@example.com'] });
    expect(mail.header('Message-ID')).toBe(composed.messageId);
  });
});
