/**
 * A local SMTP server that accepts every message and keeps it in memory: the stand-in for a real
 * mail server in tests and local development (`SMTP_URL=smtp://127.0.0.1:<port>`). `acceptDelayMs`
 * holds the final reply to DATA, to simulate a slow server.
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
}

export class SmtpSimulator {
  readonly received: ReceivedMail[] = [];
  /** Called when a message's DATA has been read, before the (possibly delayed) reply. */
  onData: ((mail: ReceivedMail) => void) | undefined;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();

  constructor(private readonly options: { acceptDelayMs?: number } = {}) {}

  async start(port = 0): Promise<number> {
    this.#server = createServer((socket) => this.#session(socket));
    await new Promise<void>((resolve) => this.#server!.listen(port, '127.0.0.1', resolve));
    const address = this.#server.address();
    return typeof address === 'object' && address ? address.port : port;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }

  #session(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.setEncoding('utf8');
    let buffer = '';
    let inData = false;
    let current: ReceivedMail = { from: '', to: [], data: '' };
    const reply = (line: string) => socket.write(`${line}\r\n`);
    reply('220 switchboard-smtp-simulator ESMTP ready');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end).replace(/^\.\./gm, '.');
          buffer = buffer.slice(end + 5);
          inData = false;
          const mail = current;
          current = { from: '', to: [], data: '' };
          this.onData?.(mail);
          setTimeout(() => {
            this.received.push(mail);
            reply('250 2.0.0 Ok: queued');
          }, this.options.acceptDelayMs ?? 0);
          continue;
        }
        const newline = buffer.indexOf('\r\n');
        if (newline < 0) return;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') reply('250 switchboard-smtp-simulator');
        else if (verb === 'MAIL') {
          current.from = /<([^>]*)>/.exec(line)?.[1] ?? '';
          reply('250 2.1.0 Ok');
        } else if (verb === 'RCPT') {
          current.to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
          reply('250 2.1.5 Ok');
        } else if (verb === 'DATA') {
          inData = true;
          reply('354 End data with <CR><LF>.<CR><LF>');
        } else if (verb === 'RSET') {
          current = { from: '', to: [], data: '' };
          reply('250 2.0.0 Ok');
        } else if (verb === 'NOOP') reply('250 2.0.0 Ok');
        else if (verb === 'QUIT') {
          reply('221 2.0.0 Bye');
          socket.end();
          return;
        } else reply('502 5.5.2 Command not recognized');
      }
    });
  }
}
