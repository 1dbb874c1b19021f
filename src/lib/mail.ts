/**
 * Outgoing mail. Messages are queued as `mail.send` jobs inside the transaction that creates them
 * (sealed, because they may carry one-time tokens) and delivered by the worker: over SMTP when
 * SMTP_URL is set, otherwise written as RFC 5322 `.eml` files under DATA_DIR/mail so that a local
 * install can complete every flow.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
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
  readonly #transport: nodemailer.Transporter;
  readonly #directory: string | undefined;

  constructor(
    private readonly config: MailTransportConfig,
    private readonly secrets: SecretBox,
    private readonly log: MailLogger,
  ) {
    if (config.smtpUrl) {
      this.#transport = nodemailer.createTransport(config.smtpUrl);
    } else {
      this.#directory = path.join(config.dataDir, 'mail');
      this.#transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
    }
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
    const info = await this.#transport.sendMail({ from: this.config.mailFrom, ...message });
    if (this.#directory) {
      await mkdir(this.#directory, { recursive: true });
      const file = path.join(this.#directory, `${Date.now()}-${randomToken(6)}.eml`);
      await writeFile(file, info.message as Buffer, { mode: 0o600 });
      this.log.info({ mail_file: file, to: message.to, subject: message.subject }, 'mail written to file');
    } else {
      this.log.info({ to: message.to, subject: message.subject, message_id: info.messageId }, 'mail sent');
    }
  }
}
