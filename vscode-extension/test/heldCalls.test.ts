import { test } from "node:test";
import assert from "node:assert/strict";
import { HeldCalls } from "../src/core/heldCalls";

test("calls made before the receiver exists reach it in their order when it attaches, later ones at once (issue 35)", () => {
  const held = new HeldCalls<string[]>(10);
  held.keep((r) => r.push("starting"));
  held.droppable((r) => r.push("event 1"));
  held.keep((r) => r.push("ready"));
  const received: string[] = [];
  assert.equal(held.attach(received), 0);
  assert.deepEqual(received, ["starting", "event 1", "ready"]);
  held.droppable((r) => r.push("event 2"));
  held.keep((r) => r.push("failed"));
  assert.deepEqual(received, ["starting", "event 1", "ready", "event 2", "failed"]);
  assert.throws(() => held.attach([]), /already attached/);
});

test("a server's flood before the receiver is bounded: droppable calls beyond the limit are counted, kept ones never dropped", () => {
  const held = new HeldCalls<string[]>(3);
  held.keep((r) => r.push("starting"));
  for (let i = 0; i < 1000; i++) held.droppable((r) => r.push(`event ${i}`));
  held.keep((r) => r.push("ready"));
  const received: string[] = [];
  assert.equal(held.attach(received), 997);
  assert.deepEqual(received, ["starting", "event 0", "event 1", "event 2", "ready"]);
});
