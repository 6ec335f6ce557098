import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs";
import { BurstOutbox, IN_FLIGHT_LIMIT_MS, IN_FLIGHT_POSTS, nodeTimer, type Timer } from "../src/core/outbox";

/** ~one frame at 60 Hz: the host held a message this long after its last post before issue 35's second round */
const FRAME_MS = 16;

/** A FAKE clock and timer: time moves only when the test says, timers run when it passes their due time. */
class FakeTimer implements Timer {
  time = 1000;
  private timers: { due: number; run: () => void; id: number }[] = [];
  private next = 0;
  now(): number {
    return this.time;
  }
  set(run: () => void, ms: number): unknown {
    const id = this.next++;
    this.timers.push({ due: this.time + ms, run, id });
    return id;
  }
  clear(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** the delays of the timers now set */
  pending(): number[] {
    return this.timers.map((t) => t.due - this.time);
  }
  advance(ms: number): void {
    this.time += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.due <= this.time).sort((a, b) => a.due - b.due)[0];
      if (!due) return;
      this.clear(due.id);
      due.run();
    }
  }
}

test("a message after a quiet frame goes on the next tick, with the rest of its burst (issue 35)", () => {
  const timer = new FakeTimer();
  const sent: string[][] = [];
  const outbox = new BurstOutbox<string>((m) => void sent.push(m), timer);
  outbox.push("a");
  outbox.push("b");
  assert.deepEqual(timer.pending(), [0], "no wait: the 4 ms timer of before is gone");
  timer.advance(0);
  assert.deepEqual(sent, [["a", "b"]]);
  timer.advance(100);
  outbox.push("c");
  assert.deepEqual(timer.pending(), [0], "a frame after the last post, the next goes at once again");
  timer.advance(0);
  assert.deepEqual(sent, [["a", "b"], ["c"]]);
});

test("a message within a frame of the last post goes at once too: the host holds nothing back, the webview draws once a frame (issue 35)", () => {
  const timer = new FakeTimer();
  const sent: string[][] = [];
  const outbox = new BurstOutbox<string>((m) => void sent.push(m), timer);
  outbox.push("a");
  timer.advance(0);
  timer.advance(5);
  outbox.push("b");
  outbox.push("c");
  assert.deepEqual(timer.pending(), [0], "5 ms after the last post, the burst goes on the next tick, not at the frame's end");
  timer.advance(0);
  assert.deepEqual(sent, [["a"], ["b", "c"]], "one post per burst, in order");
  for (let i = 0; i < 5; i++) {
    timer.advance(1);
    outbox.push(`d${i}`);
    timer.advance(0);
  }
  assert.deepEqual(sent.slice(2), [["d0"], ["d1"], ["d2"], ["d3"], ["d4"]], "each delta of a fast stream goes when it comes, none lost");
});

/** A post's answer the test settles: VS Code's postMessage resolves once the workbench handed the message over. */
function held(): { promise: Promise<boolean>; resolve: () => void; reject: () => void } {
  let resolve!: (v: boolean) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<boolean>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve: () => resolve(true), reject: () => reject(new Error("the view is gone")) };
}

/** lets the settled answers' callbacks run */
const settle = () => new Promise<void>((r) => setImmediate(r));

function answered(timer: FakeTimer) {
  const sent: string[][] = [];
  const answers: ReturnType<typeof held>[] = [];
  const outbox = new BurstOutbox<string>((m) => {
    sent.push(m);
    const answer = held();
    answers.push(answer);
    return answer.promise;
  }, timer);
  return { sent, answers, outbox };
}

test("while two posts are on their way, what comes is held and goes as one post once the first is handed over (issue 35)", async () => {
  const timer = new FakeTimer();
  const { sent, answers, outbox } = answered(timer);
  outbox.push("a");
  timer.advance(0);
  timer.advance(5);
  outbox.push("b");
  timer.advance(0);
  assert.deepEqual(sent, [["a"], ["b"]], "one post on its way: the next still goes at once (not held for the answer's way back)");
  for (const d of ["c", "d", "e"]) {
    timer.advance(5);
    outbox.push(d);
    timer.advance(0);
  }
  assert.deepEqual(IN_FLIGHT_POSTS, 2);
  assert.deepEqual(sent, [["a"], ["b"]], "the workbench has taken neither: three deltas wait, not three RPCs behind them");
  answers[0].resolve();
  await settle();
  assert.deepEqual(timer.pending().filter((ms) => ms === 0), [0], "the first handed over: the held deltas go on the next tick, with the rest of that burst");
  timer.advance(0);
  assert.deepEqual(sent, [["a"], ["b"], ["c", "d", "e"]], "one post, in order, none lost");
  answers[1].resolve();
  answers[2].resolve();
  await settle();
  timer.advance(100);
  outbox.push("f");
  assert.deepEqual(timer.pending(), [0], "nothing on its way: the next delta is not held");
  timer.advance(0);
  assert.deepEqual(sent.at(-1), ["f"]);
});

test("a post that fails or never settles holds the next one no longer than the limit", async () => {
  const timer = new FakeTimer();
  const { sent, answers, outbox } = answered(timer);
  outbox.push("a");
  timer.advance(0);
  outbox.push("b");
  timer.advance(0);
  outbox.push("c");
  timer.advance(IN_FLIGHT_LIMIT_MS - 1);
  assert.deepEqual(sent, [["a"], ["b"]]);
  timer.advance(1);
  assert.deepEqual(sent, [["a"], ["b"], ["c"]], "the posts before never settled: the next goes at the limit");
  answers[0].resolve(); // late: changes nothing
  await settle();
  outbox.push("d");
  timer.advance(0);
  outbox.push("e");
  timer.advance(0);
  assert.deepEqual(sent, [["a"], ["b"], ["c"], ["d"]], "c and d are on their way");
  answers[2].reject();
  await settle();
  timer.advance(0);
  assert.deepEqual(sent.at(-1), ["e"], "a refused post releases the next at once");
  outbox.dispose();
  assert.deepEqual(timer.pending(), [], "dispose leaves no timer");
});

test("drop removes queued messages a newer one makes moot; dispose sends nothing more", () => {
  const timer = new FakeTimer();
  const sent: string[][] = [];
  const outbox = new BurstOutbox<string>((m) => void sent.push(m), timer);
  outbox.push("input 1");
  outbox.push("input 2");
  outbox.drop((m) => m.startsWith("input"));
  outbox.push("reset");
  timer.advance(0);
  assert.deepEqual(sent, [["reset"]]);
  outbox.push("late");
  outbox.dispose();
  timer.advance(100);
  assert.deepEqual(sent, [["reset"]]);
  assert.deepEqual(timer.pending(), []);
});

test("with Node's timers, a post goes as soon as the I/O that brought it is handled, before a 0 ms setTimeout", async () => {
  const order: string[] = [];
  const outbox = new BurstOutbox<string>((m) => void order.push(`posted ${m.join(",")}`), nodeTimer);
  await new Promise<void>((done) => {
    // inside an I/O callback, as a server's message arrives: the event loop runs immediates right after it,
    // the timers wait for its next turn
    readFile(__filename, () => {
      setTimeout(() => {
        order.push("0 ms timer");
        done();
      }, 0);
      outbox.push("delta");
    });
  });
  assert.deepEqual(order, ["posted delta", "0 ms timer"]);
  // a post not yet made is cancelled by dispose
  outbox.push("late");
  outbox.dispose();
  await new Promise((r) => setTimeout(r, FRAME_MS + 5));
  assert.deepEqual(order, ["posted delta", "0 ms timer"]);
});
