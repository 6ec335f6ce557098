import { test } from "node:test";
import assert from "node:assert/strict";
import { catchUpRequest, PAGE_LIMIT, seqVerdict } from "../src/core/sequence";
import { isBusy, STATUS, STATUSES, statusText } from "../src/core/status";

test("the catch-up rule: a seen seq is dropped, the next applied, a jump is a gap to close after the last seen (REQ-PROTO-007)", () => {
  assert.equal(seqVerdict(3, 5), "seen");
  assert.equal(seqVerdict(5, 5), "seen");
  assert.equal(seqVerdict(6, 5), "next");
  assert.equal(seqVerdict(9, 5), "gap");
  assert.deepEqual(catchUpRequest("c-1", 5), { conversationId: "c-1", afterSeq: 5, limit: PAGE_LIMIT });
  assert.deepEqual(catchUpRequest("c-1"), { conversationId: "c-1", limit: PAGE_LIMIT });
});

test("one table of the statuses: each has its words, and the agent works in four of them", () => {
  assert.deepEqual(STATUSES, Object.keys(STATUS));
  assert.equal(STATUSES.length, 10);
  for (const s of STATUSES) assert.ok(statusText(s).length > 0, s);
  assert.deepEqual(STATUSES.filter(isBusy), ["awaiting_llm", "running_tool", "awaiting_agents", "summarizing"]);
  assert.equal(statusText("awaiting_approval"), "Waiting for your approval");
});
