/**
 * The host's messages to the chat webview, one post per burst (issue 35): a message goes right after the I/O
 * that brought it is handled (`nodeTimer`: a setImmediate), with whatever the same burst of events adds, so a
 * burst costs one postMessage (one IPC hop) and no delta waits for a timer in the host.
 *
 * The host no longer holds a message back to keep to one post a frame: the page is drawn once a frame anyway
 * (the webview puts each message in its DOM as it comes, webview/app.ts, and the browser paints what changed at
 * its next frame), so the hold saved IPC messages, not frames, and cost a delta that came within 16 ms of the
 * last post the rest of that frame in the host and, often, the webview's next frame too. A fast stream is gathered upstream already (the
 * server's outbox sends its deltas at most once per `event_coalesce_ms`, one event per flush). The pacing is
 * pure: the timer is passed in.
 */

export interface Timer {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/**
 * Node's timers for the outbox: no wait is a setImmediate, which runs as soon as the I/O that brought the
 * event is handled; a 0 ms setTimeout waits for the event loop to come round to its timers, 1 ms at least
 * (and behind any I/O that comes meanwhile).
 */
export const nodeTimer: Timer = {
  set: (run, ms) => (ms <= 0 ? { immediate: setImmediate(run) } : { timeout: setTimeout(run, ms) }),
  clear: (handle) => {
    const h = handle as { immediate?: ReturnType<typeof setImmediate>; timeout?: ReturnType<typeof setTimeout> };
    if (h.immediate) clearImmediate(h.immediate);
    if (h.timeout) clearTimeout(h.timeout);
  },
};

export class BurstOutbox<M> {
  private queue: M[] = [];
  private handle: unknown;

  constructor(
    /** posts what is queued (one message or several), in order */
    private readonly send: (messages: M[]) => void,
    private readonly timer: Timer,
  ) {}

  push(message: M): void {
    this.queue.push(message);
    this.handle ??= this.timer.set(() => this.flush(), 0);
  }

  /** Removes queued messages that a newer one makes moot (a reset replaces the inputs before it). */
  drop(moot: (message: M) => boolean): void {
    this.queue = this.queue.filter((m) => !moot(m));
  }

  flush(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    const messages = this.queue;
    this.queue = [];
    if (messages.length === 0) return;
    this.send(messages);
  }

  dispose(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    this.queue = [];
  }
}
