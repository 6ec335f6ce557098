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
 *
 * Posts on their way are bounded: while two have not settled (VS Code's postMessage settles once the workbench,
 * whose main thread also runs the chat view, handed the message to the view), what comes is held and goes as
 * one post when the first settles. A busy workbench then takes one message for a backlog instead of one per
 * delta, each an RPC to decode, a relay through the view's two frames and a drawing on that same thread. Two,
 * not one: the second post goes while the first's answer travels back, so a delta that comes while a single
 * post is on its way (a workbench a few ms behind) is not held for that round trip; with none on its way
 * nothing is held at all.
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

/**
 * How long a post may stay on its way before the outbox stops waiting for it: VS Code settles a webview's
 * postMessage once the workbench handed the message to the view (or the view is gone), so this bounds only a
 * post that never settles, which must not stop the chat.
 */
export const IN_FLIGHT_LIMIT_MS = 1000;

/** posts that may be on their way at once; what comes beyond them waits for the first to settle */
export const IN_FLIGHT_POSTS = 2;

export class BurstOutbox<M> {
  private queue: M[] = [];
  private handle: unknown;
  /** the posts on their way (each with its limit's timer), while `send`'s answer has not settled */
  private readonly inFlight = new Set<{ limit: unknown }>();

  constructor(
    /** posts what is queued (one message or several), in order; a thenable answer holds the next post until it
     *  settles (VS Code's postMessage: the message was handed to the view) */
    private readonly send: (messages: M[]) => PromiseLike<unknown> | void,
    private readonly timer: Timer,
    private readonly limitMs: number = IN_FLIGHT_LIMIT_MS,
  ) {}

  push(message: M): void {
    this.queue.push(message);
    this.schedule();
  }

  /** Removes queued messages that a newer one makes moot (a reset replaces the inputs before it). */
  drop(moot: (message: M) => boolean): void {
    this.queue = this.queue.filter((m) => !moot(m));
  }

  /** the next tick, unless IN_FLIGHT_POSTS are on their way: then what is queued goes when the first settles */
  private schedule(): void {
    if (this.inFlight.size >= IN_FLIGHT_POSTS || this.handle !== undefined || this.queue.length === 0) return;
    this.handle = this.timer.set(() => this.flush(), 0);
  }

  private flush(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    if (this.inFlight.size >= IN_FLIGHT_POSTS) return;
    const messages = this.queue;
    this.queue = [];
    if (messages.length === 0) return;
    const sent = this.send(messages);
    if (!sent) return;
    const flight = { limit: undefined as unknown };
    const settled = (): void => {
      if (!this.inFlight.delete(flight)) return; // the limit passed, or the outbox was disposed
      this.timer.clear(flight.limit);
      this.schedule();
    };
    this.inFlight.add(flight);
    flight.limit = this.timer.set(settled, this.limitMs);
    sent.then(settled, settled);
  }

  dispose(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    for (const flight of this.inFlight) this.timer.clear(flight.limit);
    this.handle = undefined;
    this.inFlight.clear();
    this.queue = [];
  }
}
