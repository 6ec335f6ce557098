/**
 * A review's file is opened only inside the conversation's folder (issue 36, REQ-VSC-017): the paths a hostile
 * server or a crafted diff could name are refused before anything is opened.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { inFolder } from "../src/core/inFolder";

const FOLDER = "/work/project";

test("REQ-VSC-017 a review's file inside the folder is opened there", () => {
  assert.equal(inFolder(FOLDER, "src/a.py"), "/work/project/src/a.py");
  assert.equal(inFolder(FOLDER, "src/../b.py"), "/work/project/b.py");
  assert.equal(inFolder(FOLDER, "..b.py"), "/work/project/..b.py"); // a name starting with two dots stays inside
});

test("REQ-VSC-017 a review's path that climbs out of the folder, or names another, is refused", () => {
  for (const rel of ["../secret", "a/../../secret", "..", "/etc/passwd", "/work/project-other/x", "", "."]) {
    assert.throws(() => inFolder(FOLDER, rel), /outside the workspace folder/, rel);
  }
});
