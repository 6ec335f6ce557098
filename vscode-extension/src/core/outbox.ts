/**
 * The host's messages to the chat webview, paced by the webview's frame (issue 35). A message after a quiet
 * frame goes with no wait (`nodeTimer` runs it right after the I/O that brought it, with whatever the same
 * burst of events adds: one postMessage, one IPC hop);
 * messages that come within a frame of the last post wait for that frame's end and go together. So a delta
 * of a stream that arrives every 25 ms waits for no timer, and a faster stream costs at most one post a frame
 * (the webview renders once a frame anyway). The pacing is pure: the clock and the timer are passed in.
 */

export interface Timer {
  now(): number;
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/**
 * Node's clock and timers for the outbox: no wait is a setImmediate, which runs as soon as the I/O that
 * brought the event is handled; a 0 ms setTimeout waits for the event loop to come round to its timers, 1 ms at least
 * (and behind any I/O that comes meanwhile). A wait is a setTimeout to the frame's end.
 */
export const nodeTimer: Timer = {
  now: () => performance.now(),
  set: (run, ms) => (ms <= 0 ? { immediate: setImmediate(run) } : { timeout: setTimeout(run, ms) }),
  clear: (handle) => {
    const h = handle as { immediate?: ReturnType<typeof setImmediate>; timeout?: ReturnType<typeof setTimeout> };
    if (h.immediate) clearImmediate(h.immediate);
    if (h.timeout) clearTimeout(h.timeout);
  },
};

/** ~one frame at 60 Hz */
export const FRAME_MS = 16;

export class FrameOutbox<M> {
  private queue: M[] = [];
  private handle: unknown;
  private lastSent = Number.NEGATIVE_INFINITY;

  constructor(
    /** posts what is queued (one message or several), in order */
    private readonly send: (messages: M[]) => void,
    private readonly timer: Timer,
  ) {}

  push(message: M): void {
    this.queue.push(message);
    if (this.handle !== undefined) return;
    const wait = Math.max(0, this.lastSent + FRAME_MS - this.timer.now());
    this.handle = this.timer.set(() => this.flush(), wait);
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
    this.lastSent = this.timer.now();
    this.send(messages);
  }

  dispose(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    this.queue = [];
  }
}
