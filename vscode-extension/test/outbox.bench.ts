/**
 * bench vscode's outbox figure (issue 35), run by bench/vscode.py: how long the host holds each text delta
 * before it posts it to the chat view, with Node's own timers, over the arrival times of a real stream (the
 * bare LSP run's phoenix/event arrivals, in ms apart, from the JSON file given; 25 ms apart without one). Beside
 * it, in the same run and over the same arrivals, the outbox before issue 35's second round: a message within
 * a frame (16 ms) of the last post held until that frame's end. Prints one JSON line. Not a test (no
 * assertion): `node out-test/test/outbox.bench.js [gaps.json]`.
 */

import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { BurstOutbox, nodeTimer } from "../src/core/outbox";

/** The outbox as it was (the baseline): one post a frame, what comes within it waits for its end. */
class FrameHeldOutbox<M> {
  private queue: M[] = [];
  private handle: ReturnType<typeof setTimeout> | ReturnType<typeof setImmediate> | undefined;
  private lastSent = Number.NEGATIVE_INFINITY;
  constructor(private readonly send: (messages: M[]) => void) {}
  push(message: M): void {
    this.queue.push(message);
    if (this.handle !== undefined) return;
    const wait = Math.max(0, this.lastSent + 16 - performance.now());
    this.handle = wait <= 0 ? setImmediate(() => this.flush()) : setTimeout(() => this.flush(), wait);
  }
  private flush(): void {
    this.handle = undefined;
    const messages = this.queue;
    this.queue = [];
    this.lastSent = performance.now();
    this.send(messages);
  }
}

interface Outbox {
  push(message: number): void;
}

/** Replays the arrivals into an outbox; resolves with each delta's hold (ms) and the number of posts. */
function replay(gaps: number[], make: (send: (messages: number[]) => void) => Outbox): Promise<{ holds: number[]; posts: number }> {
  return new Promise((done) => {
    const pushed: number[] = [];
    const holds: number[] = [];
    let posts = 0;
    const outbox = make((messages) => {
      const now = performance.now();
      posts++;
      for (const i of messages) holds[i] = now - pushed[i];
      if (holds.length === gaps.length + 1 && !holds.includes(undefined as unknown as number)) done({ holds, posts });
    });
    const start = performance.now();
    let due = 0;
    const next = (i: number): void => {
      pushed[i] = performance.now();
      outbox.push(i);
      if (i === gaps.length) return;
      due += gaps[i];
      setTimeout(() => next(i + 1), Math.max(0, start + due - performance.now()));
    };
    next(0);
  });
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round(q * (s.length - 1)))];
};

async function main(): Promise<void> {
  const file = process.argv[2];
  const gaps: number[] = file ? (JSON.parse(readFileSync(file, "utf8")) as number[]) : Array.from({ length: 599 }, () => 25);
  const now = await replay(gaps, (send) => new BurstOutbox<number>(send, nodeTimer));
  const before = await replay(gaps, (send) => new FrameHeldOutbox<number>(send));
  const within = gaps.filter((g) => g < 16).length;
  console.log(
    JSON.stringify({
      deltas: gaps.length + 1,
      within_frame: within,
      hold_p50_ms: pct(now.holds, 0.5),
      hold_p99_ms: pct(now.holds, 0.99),
      hold_max_ms: Math.max(...now.holds),
      posts: now.posts,
      baseline_hold_p50_ms: pct(before.holds, 0.5),
      baseline_hold_p99_ms: pct(before.holds, 0.99),
      baseline_hold_max_ms: Math.max(...before.holds),
      baseline_posts: before.posts,
    }),
  );
}

void main();
