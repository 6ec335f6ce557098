import { test } from "node:test";
import assert from "node:assert/strict";
import { busyPercent, parseCpuTicks, parseSchedstat, readyLine, schedSince } from "../src/core/startClock";

test("schedstat: ns on a CPU and ns waiting for one, as ms; anything else is unknown (issue 35)", () => {
  assert.deepEqual(parseSchedstat("382000000 455500000 120\n"), { runMs: 382, waitMs: 455.5 });
  for (const bad of [undefined, "", "1 2", "a b c", "1 2 3 4", "-1 2 3"]) assert.equal(parseSchedstat(bad), undefined, String(bad));
  assert.deepEqual(schedSince({ runMs: 10, waitMs: 5 }, { runMs: 30, waitMs: 45 }), { runMs: 20, waitMs: 40 });
  assert.equal(schedSince(undefined, { runMs: 1, waitMs: 1 }), undefined);
});

test("/proc/stat: the busy share of all cores between two readings, idle and iowait not busy", () => {
  const a = parseCpuTicks("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n");
  const b = parseCpuTicks("cpu  250 0 150 750 100 0 0 0 0 0\n");
  assert.deepEqual(a, { busy: 200, total: 1000 });
  assert.equal(busyPercent(a, b), 80);
  assert.equal(busyPercent(b, a), undefined, "a reading that went back is no figure");
  for (const bad of [undefined, "", "cpu0 1 2 3 4", "cpu 1 2"]) assert.equal(parseCpuTicks(bad), undefined, String(bad));
});

test("the ready line keeps the words the bench reads, and leaves out what could not be read", () => {
  assert.equal(readyLine({ readyMs: 837.4 }), "the server is ready (initialize answered 837 ms after the spawn)");
  assert.equal(
    readyLine({ readyMs: 900, activatedMs: 3, loadedMs: 95.6, sentMs: 140 }),
    "the server is ready (initialize answered 900 ms after the spawn; activate called 3 ms after it; host.js loaded 96 ms " +
      "after it; sent 140 ms after it)",
  );
  assert.equal(
    readyLine({ readyMs: 837, sentMs: 212, server: { runMs: 380, waitMs: 401 }, host: { runMs: 500, waitMs: 90 }, busy: 97.6 }),
    "the server is ready (initialize answered 837 ms after the spawn; sent 212 ms after it; the server ran 380 ms " +
      "and waited 401 ms for a CPU; the extension host ran 500 ms and waited 90 ms; cores 98% busy)",
  );
});
