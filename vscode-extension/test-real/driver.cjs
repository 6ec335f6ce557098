#!/usr/bin/env node
// Drives a code-server workbench in headless Chromium with playwright-core, for the real-VS-Code test
// (tests/clients/vscode_real) and the VS Code benchmark (bench/vscode.py).
//
// Usage: node driver.cjs CONFIG.json   (playwright-core resolved through NODE_PATH)
//   CONFIG: {url, chromium, artifacts, viewport?: {width, height}, webview?: {extensionId}}
// Then it reads one JSON command per line on stdin and answers one JSON line on stdout per command:
//   -> {"id": 1, "op": "click", "frame": "webview", "selector": "[data-testid=send]"}
//   <- {"id": 1, "ok": true, "result": ...}   or   {"id": 1, "ok": false, "error": "..."}
// Frames: "page" (the workbench) or "webview" (the inner frame of the webview whose outer iframe's src
// names config.webview.extensionId). Every wait is bounded by its own `timeout` (ms, default 30 s).
// Logs go to stderr. On stdin EOF (or SIGTERM) the browser is closed and the process exits.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const { chromium } = require("playwright-core");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const DEFAULT_TIMEOUT = 30000;
let browser;
let page;

function log(...args) {
  process.stderr.write(`[driver ${new Date().toISOString()}] ${args.join(" ")}\n`);
}

function webviewFrame(extensionId) {
  const id = extensionId || (config.webview && config.webview.extensionId);
  const outer = id ? `iframe.webview.ready[src*="extensionId=${id}"]` : "iframe.webview.ready";
  return page.frameLocator(outer).frameLocator("iframe#active-frame");
}

function root(cmd) {
  if (!cmd.frame || cmd.frame === "page") return page;
  if (cmd.frame === "webview") return webviewFrame(cmd.extensionId);
  throw new Error(`unknown frame ${cmd.frame}`);
}

function loc(cmd) {
  let l = root(cmd).locator(cmd.selector);
  if (cmd.hasText !== undefined) l = l.filter({ hasText: cmd.hasText });
  if (cmd.hasTextRegex !== undefined) l = l.filter({ hasText: new RegExp(cmd.hasTextRegex) });
  if (cmd.nth !== undefined) l = l.nth(cmd.nth);
  else if (cmd.first) l = l.first();
  else if (cmd.last) l = l.last();
  return l;
}

async function paletteCommand(title, timeout, opensQuickInput = false) {
  // F1 opens the command palette with ">" already typed. Right after a (re)load the palette may not list
  // the extensions' commands yet: close it and ask again until the command shows up.
  const deadline = Date.now() + timeout;
  const input = page.locator(".quick-input-widget .quick-input-box input");
  const row = page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: title }).first();
  // The palette can also close by itself between finding the row and clicking it (the workbench restoring
  // its editors after a reload takes the focus): then the whole attempt starts again. A click that timed out
  // did not happen, so a command never runs twice.
  const within = (ms) => Math.max(1, Math.min(ms, deadline - Date.now()));
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("Escape");
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ state: "visible", timeout: within(10000) });
      await input.fill(`>${title}`);
      await row.waitFor({ state: "visible", timeout: within(3000) });
      await row.click({ timeout: within(5000) });
      break;
    } catch (e) {
      if (Date.now() >= deadline) {
        throw new Error(`command palette: "${title}" not run after ${attempt} attempts: ${String(e).split("\n")[0]}`);
      }
    }
  }
  if (opensQuickInput) return; // the command shows a quick pick of its own: the caller waits for it
  await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: Math.max(1, deadline - Date.now()) });
}

async function waitWorkbench(timeout) {
  await page.locator(".monaco-workbench .part.statusbar").waitFor({ state: "visible", timeout });
  // The explorer (or any view) is restored once the workbench finished its start-up.
  await page.locator(".monaco-workbench .part.activitybar, .monaco-workbench .activitybar").first()
    .waitFor({ state: "visible", timeout });
}

// A function given as source text ("(el, arg) => ..."): playwright evaluates a string as an expression, so
// turn it into a function here; playwright sends its source to the page and calls it there.
function fnOf(source) {
  return new Function(`return (${source});`)();
}

const ops = {
  async goto(cmd) {
    await page.goto(cmd.url || config.url, { waitUntil: "domcontentloaded", timeout: cmd.timeout });
    await waitWorkbench(cmd.timeout);
    return page.url();
  },
  async reload(cmd) {
    await page.reload({ waitUntil: "domcontentloaded", timeout: cmd.timeout });
    // workbench: false leaves the waiting to the caller (the benchmark: playwright's wait polls in the page,
    // each animation frame, on the cores the window loads on)
    if (cmd.workbench !== false) await waitWorkbench(cmd.timeout);
    return page.url();
  },
  async waitWorkbench(cmd) {
    await waitWorkbench(cmd.timeout);
  },
  async command(cmd) {
    await paletteCommand(cmd.title, cmd.timeout, cmd.opensQuickInput);
  },
  async click(cmd) {
    await loc(cmd).click({ timeout: cmd.timeout });
  },
  async focus(cmd) {
    await loc(cmd).focus({ timeout: cmd.timeout });
  },
  async fill(cmd) {
    await loc(cmd).fill(cmd.value, { timeout: cmd.timeout });
  },
  async type(cmd) {
    // Real key events, one per character (pressSequentially).
    await loc(cmd).pressSequentially(cmd.value, { timeout: cmd.timeout, delay: cmd.delay || 0 });
  },
  async press(cmd) {
    // With a selector, the element is focused first; without, the key goes to whatever has focus.
    if (cmd.selector) await loc(cmd).press(cmd.key, { timeout: cmd.timeout });
    else await page.keyboard.press(cmd.key);
  },
  async waitFor(cmd) {
    await loc(cmd).waitFor({ state: cmd.state || "visible", timeout: cmd.timeout });
  },
  async waitForText(cmd) {
    // Until the element's innerText contains cmd.text (or matches cmd.regex).
    const l = loc(cmd);
    const deadline = Date.now() + cmd.timeout;
    let last = "";
    for (;;) {
      try {
        last = await l.innerText({ timeout: Math.max(1, deadline - Date.now()) });
        if (cmd.regex ? new RegExp(cmd.regex).test(last) : last.includes(cmd.text)) return last;
      } catch (e) {
        if (Date.now() >= deadline) throw e;
      }
      if (Date.now() >= deadline) {
        throw new Error(`${cmd.selector}: text ${JSON.stringify(cmd.text || cmd.regex)} not seen; last: ${JSON.stringify(last.slice(-500))}`);
      }
      await page.waitForTimeout(50);
    }
  },
  async inspect(cmd) {
    // A snapshot of the matching elements (no waiting): count, and for each: text, visible, disabled, focused.
    const l = root(cmd).locator(cmd.selector);
    const n = await l.count();
    const items = [];
    for (let i = 0; i < n; i++) {
      const e = l.nth(i);
      items.push(
        await e.evaluate((el) => ({
          text: el.innerText,
          value: "value" in el ? el.value : null,
          visible: !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length),
          disabled: !!el.disabled || el.getAttribute("aria-disabled") === "true",
          focused: el === el.ownerDocument.activeElement || el.contains(el.ownerDocument.activeElement),
          attrs: Object.fromEntries([...el.attributes].map((a) => [a.name, a.value])),
        }), undefined, { timeout: cmd.timeout }),
      );
    }
    return { count: n, items };
  },
  async evaluate(cmd) {
    // cmd.fn: "(el, arg) => ..." evaluated against the first element matching cmd.selector (default body).
    return await root(cmd).locator(cmd.selector || "body").first().evaluate(fnOf(cmd.fn), cmd.arg, { timeout: cmd.timeout });
  },
  async waitForFunction(cmd) {
    const l = root(cmd).locator(cmd.selector || "body").first();
    const deadline = Date.now() + cmd.timeout;
    for (;;) {
      let value;
      try {
        value = await l.evaluate(fnOf(cmd.fn), cmd.arg, { timeout: Math.max(1, deadline - Date.now()) });
      } catch (e) {
        if (Date.now() >= deadline) throw e;
      }
      if (value) return value;
      if (Date.now() >= deadline) throw new Error(`waitForFunction timed out after ${cmd.timeout} ms: ${cmd.fn.slice(0, 200)}`);
      await page.waitForTimeout(cmd.interval || 50);
    }
  },
  async screenshot(cmd) {
    const file = path.isAbsolute(cmd.path) ? cmd.path : path.join(config.artifacts, cmd.path);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (cmd.selector) await loc(cmd).screenshot({ path: file, timeout: cmd.timeout });
    else await page.screenshot({ path: file, timeout: cmd.timeout, clip: cmd.clip });
    return file;
  },
  async boundingBox(cmd) {
    return await loc(cmd).boundingBox({ timeout: cmd.timeout });
  },
  async dragEdge(cmd) {
    // Drag the right (or bottom) edge of an element by dx (dy) pixels: resizes a workbench part via its sash.
    const box = await loc(cmd).boundingBox({ timeout: cmd.timeout });
    if (!box) throw new Error(`${cmd.selector}: no bounding box`);
    const x = cmd.edge === "bottom" ? box.x + box.width / 2 : box.x + box.width + 1;
    const y = cmd.edge === "bottom" ? box.y + box.height + 1 : box.y + box.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x + (cmd.dx || 0), y + (cmd.dy || 0), { steps: 10 });
    await page.mouse.up();
    return await loc(cmd).boundingBox({ timeout: cmd.timeout });
  },
  async frames() {
    return page.frames().map((f) => f.url());
  },
  async html(cmd) {
    return await loc(cmd).evaluate((el) => el.outerHTML, undefined, { timeout: cmd.timeout });
  },
  async now() {
    return Date.now();
  },
};

async function main() {
  const args = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
  ];
  browser = await chromium.launch({ executablePath: config.chromium, headless: true, args });
  const context = await browser.newContext({ viewport: config.viewport || { width: 1440, height: 900 } });
  page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error") log("console error:", m.text().slice(0, 500));
  });
  page.on("pageerror", (e) => log("page error:", String(e).slice(0, 500)));
  log(`chromium ${browser.version()} up`);
  process.stdout.write(JSON.stringify({ ready: true, browser: browser.version(), pid: process.pid }) + "\n");

  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (e) {
      process.stdout.write(JSON.stringify({ id: null, ok: false, error: `bad command: ${e}` }) + "\n");
      continue;
    }
    cmd.timeout = cmd.timeout || DEFAULT_TIMEOUT;
    const t0 = Date.now();
    let answer;
    try {
      const fn = ops[cmd.op];
      if (!fn) throw new Error(`unknown op ${cmd.op}`);
      const result = await fn(cmd);
      answer = { id: cmd.id, ok: true, result: result === undefined ? null : result, ms: Date.now() - t0 };
    } catch (e) {
      answer = { id: cmd.id, ok: false, error: String((e && e.message) || e), ms: Date.now() - t0 };
    }
    log(`${cmd.op} ${cmd.selector || cmd.title || cmd.key || ""} -> ${answer.ok ? "ok" : "FAILED"} (${answer.ms} ms)`);
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  await browser.close();
}

async function shutdown(code) {
  try {
    if (browser) await browser.close();
  } finally {
    process.exit(code);
  }
}

process.on("SIGTERM", () => shutdown(0));
main().catch(async (e) => {
  log("fatal:", (e && e.stack) || e);
  await shutdown(1);
});
