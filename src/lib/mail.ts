/**
 * Outgoing mail. Messages are queued as `mail.send` jobs inside the transaction that creates them
 * (sealed, because they may carry one-time tokens) and delivered by the worker: over SMTP when
 * SMTP_URL is set, otherwise written as RFC 5322 `.eml` files under DATA_DIR/mail so that a local
 * install can complete every flow.
 *
 * A person copies links and tokens out of these mails, often from the raw file: the text goes
 * unencoded (7bit, or 8bit when it holds non-ASCII characters) so that each line stays whole —
 * nodemailer would pick quoted-printable for any line past 76 characters, cutting a link with a
 * soft line break and turning its `=` into `=3D`.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { JobEnqueuer } from '../queue/queue.js';
import { randomToken } from './crypto.js';
import type { SecretBox } from './secrets.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface MailTransportConfig {
  smtpUrl: string | undefined;
  mailFrom: string;
  dataDir: string;
}

export interface MailLogger {
  info(details: object, message: string): void;
}

export class Mailer {
  readonly #transport: nodemailer.Transporter | undefined;
  readonly #directory: string | undefined;

  constructor(
    private readonly config: MailTransportConfig,
    private readonly secrets: SecretBox,
    private readonly log: MailLogger,
  ) {
    if (config.smtpUrl) this.#transport = nodemailer.createTransport(config.smtpUrl);
    else this.#directory = path.join(config.dataDir, 'mail');
  }

  /** Directory of mail files, when mail is not sent over SMTP. */
  get directory(): string | undefined {
    return this.#directory;
  }

  /** Queues `message` so that it is sent if and only if the surrounding transaction commits. */
  async queue(jobs: JobEnqueuer, message: MailMessage): Promise<void> {
    await jobs.enqueue('mail.send', { sealed_message: this.secrets.sealJson(message) });
  }

  /** The `mail.send` worker: opens the sealed message and delivers it. */
  async deliver(payload: { sealed_message: string }): Promise<void> {
    const message = this.secrets.openJson<MailMessage>(payload.sealed_message);
    if (this.#transport) {
      // SMTP lines end in CRLF (RFC 5321); the files keep the platform's plain LF, for grep and sed.
      const composed = await composeMail(this.config.mailFrom, message, '\r\n');
      await this.#transport.sendMail({ envelope: composed.envelope, raw: composed.raw });
      this.log.info(
        { to: message.to, subject: message.subject, message_id: composed.messageId },
        'mail sent',
      );
      return;
    }
    const directory = this.#directory as string;
    const composed = await composeMail(this.config.mailFrom, message, '\n');
    await mkdir(directory, { recursive: true });
    const file = path.join(directory, `${Date.now()}-${randomToken(6)}.eml`);
    // Written under another name and renamed: whoever lists *.eml (a person, a script, the README's
    // steps) sees a whole message or none, never the empty file a plain write shows for a moment.
    const partial = `${file}.partial`;
    await writeFile(partial, composed.raw, { mode: 0o600 });
    await rename(partial, file);
    this.log.info({ mail_file: file, to: message.to, subject: message.subject }, 'mail written to file');
  }
}

/** RFC 5322 caps a line at 998 octets; a text with a longer one falls back to nodemailer's own choice. */
const MAX_LINE_OCTETS = 998;

export interface ComposedMail {
  raw: Buffer;
  envelope: { from: string | false; to: string[] };
  messageId: string;
}

/**
 * Builds one text/plain message. nodemailer writes the header block (RFC 2047 encoded words for
 * non-ASCII names and subjects, folding, Date, Message-ID); the body is ours, unencoded, so each
 * line of `message.text` is one line of the file.
 */
export async function composeMail(
  from: string,
  message: MailMessage,
  newline: '\n' | '\r\n',
): Promise<ComposedMail> {
  const lines = message.text.replace(/\r\n?/g, '\n').split('\n');
  const fits = lines.every((line) => Buffer.byteLength(line) <= MAX_LINE_OCTETS);
  // Headers only: an empty body leaves the transfer encoding to us.
  const node = new MailComposer({ from, ...message, text: fits ? '' : message.text }).compile();
  node.setHeader('Content-Type', 'text/plain; charset=utf-8');
  const envelope = node.getEnvelope();
  const messageId = node.messageId();
  if (!fits) {
    const built = (await node.build()).toString('utf8');
    return { raw: Buffer.from(built.replace(/\r\n/g, newline)), envelope, messageId };
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the 7-bit range is the point
  const encoding = /[^\x00-\x7f]/.test(message.text) ? '8bit' : '7bit';
  const headers = node
    .buildHeaders()
    .split('\r\n')
    .filter((line) => !/^Content-Transfer-Encoding:/i.test(line));
  headers.push(`Content-Transfer-Encoding: ${encoding}`);
  return { raw: Buffer.from([...headers, '', ...lines].join(newline)), envelope, messageId };
}
