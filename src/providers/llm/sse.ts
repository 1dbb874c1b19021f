/**
 * A server-sent events reader for streamed HTTP answers: bytes in, the `data` of each event out.
 * Vendors and the gateways in front of them differ in small ways the reader must absorb: `\r\n` or
 * `\r` line ends, `: keep-alive` comment lines, an event split across network chunks (or a multi-byte
 * character split between two), several `data:` lines in one event (joined with `\n`, as the SSE
 * specification says), and a last event sent without its closing blank line.
 */
export class SseReader {
  readonly #decoder = new TextDecoder();
  #buffer = '';
  #data: string[] = [];

  /** Feeds the next bytes; returns the data of every event they complete. */
  push(bytes: Uint8Array): string[] {
    this.#buffer += this.#decoder.decode(bytes, { stream: true });
    return this.#drain(false);
  }

  /** The stream ended: whatever event is still open counts as complete. */
  end(): string[] {
    this.#buffer += this.#decoder.decode();
    return this.#drain(true);
  }

  #drain(final: boolean): string[] {
    const events: string[] = [];
    for (;;) {
      const lineEnd = this.#buffer.search(/\r\n|\r|\n/);
      // A lone `\r` at the end may be the first half of a `\r\n` still on its way.
      if (lineEnd < 0 || (!final && lineEnd === this.#buffer.length - 1 && this.#buffer.endsWith('\r')))
        break;
      const line = this.#buffer.slice(0, lineEnd);
      const separator = this.#buffer.startsWith('\r\n', lineEnd) ? 2 : 1;
      this.#buffer = this.#buffer.slice(lineEnd + separator);
      this.#line(line, events);
    }
    if (final) {
      if (this.#buffer !== '') this.#line(this.#buffer, events);
      this.#buffer = '';
      this.#line('', events);
    }
    return events;
  }

  #line(line: string, events: string[]): void {
    if (line === '') {
      if (this.#data.length > 0) events.push(this.#data.join('\n'));
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    // One optional space after the colon belongs to the syntax, not to the value.
    const value = colon < 0 ? '' : line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1);
    // `event:`, `id:` and `retry:` carry nothing the chat completion dialect uses.
    if (field === 'data') this.#data.push(value);
  }
}
