/**
 * A one-reader queue that turns pushed values into an async iterable: how a WebSocket or an HTTP
 * stream's callbacks become the `AsyncIterable` events of the provider contracts. `end()` finishes the
 * iteration after what is queued; `fail(error)` makes the reader's next step throw it (after what is
 * queued); a reader that stops early (`break`, `return()`) calls `onCancel` so the producer can stop.
 */
export class Channel<T> implements AsyncIterable<T> {
  readonly #queue: T[] = [];
  #waiting: { resolve: (step: IteratorResult<T>) => void; reject: (error: unknown) => void } | undefined;
  #ended = false;
  #error: unknown;
  #failed = false;

  constructor(private readonly onCancel?: () => void) {}

  /** False once ended or failed (later pushes are dropped). */
  get open(): boolean {
    return !this.#ended && !this.#failed;
  }

  push(value: T): void {
    if (!this.open) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting.resolve({ value, done: false });
    } else {
      this.#queue.push(value);
    }
  }

  end(): void {
    if (!this.open) return;
    this.#ended = true;
    this.#settleWaiting();
  }

  fail(error: unknown): void {
    if (!this.open) return;
    this.#failed = true;
    this.#error = error;
    this.#settleWaiting();
  }

  #settleWaiting(): void {
    const waiting = this.#waiting;
    if (!waiting || this.#queue.length > 0) return;
    this.#waiting = undefined;
    if (this.#failed) waiting.reject(this.#error);
    else waiting.resolve({ value: undefined, done: true });
  }

  #next(): Promise<IteratorResult<T>> {
    if (this.#queue.length > 0) return Promise.resolve({ value: this.#queue.shift()!, done: false });
    if (this.#failed) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.#next(),
      return: async () => {
        if (this.open) {
          this.#ended = true;
          this.#queue.length = 0;
          this.onCancel?.();
        }
        return { value: undefined, done: true };
      },
    };
  }
}
