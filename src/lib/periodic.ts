/**
 * Work repeated on a timer in each worker process (the campaign and knowledge sweeps): run now, then
 * every interval; never two passes at once (a slow pass makes the next tick a no-op); a failure is
 * logged and the next tick tries again; `stop` waits for the pass in flight. The timer does not keep
 * the process alive.
 */
export class Periodic {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(
    private readonly pass: () => Promise<unknown>,
    private readonly options: { intervalSeconds: number; onError: (error: unknown) => void },
  ) {}

  start(): void {
    if (this.#timer) return;
    const tick = () => {
      this.#running ??= this.pass()
        .then(
          () => undefined,
          (error) => this.options.onError(error),
        )
        .finally(() => {
          this.#running = undefined;
        });
    };
    this.#timer = setInterval(tick, this.options.intervalSeconds * 1000);
    this.#timer.unref();
    tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
