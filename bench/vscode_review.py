"""Issue 36's VS Code figure measured in a REAL VS Code: the review of 200 changed files opens under a second.

code-server 4.139.1 in headless Chromium with the packaged extension and this checkout's server (the rig of
tests/clients/vscode_real), an Unrestricted + interactive conversation, the fake Anthropic server (its own
process) scripting a bash command that changes 200 text files in a real overlay. Measured in the chat webview:
from the extension host's post of the message that carries the review (its ``at``, epoch ms) to the review
drawn in the dialog (a MutationObserver, ``performance.timeOrigin + performance.now()``, the same clock), and
from that message's arrival in the webview to the review drawn. Baseline, in the same run and the same way: a
one-file patch approval, from its post to its dialog drawn. Each review is denied (nothing lands), so every
run starts from the same folder.

Needs the tools of scripts/install-vscode-test-deps.sh. Run: ``python -m bench.vscode_review [--runs N]`` or
``python -m bench [--quick] vscode_review``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from typing import Any

from bench.vscode import ROOT, _Fake

FILES = 200
REVIEW_TAG = "[[bench-review]]"
PATCH_TAG = "[[bench-patch]]"
COMMAND = f"for i in $(seq -w 0 {FILES - 1}); do echo changed >> f$i.txt; done"
REVIEW = "[data-testid=approval-dialog][data-open=true] [data-testid=review]"
DIALOG = "[data-testid=approval-dialog][data-open=true][data-kind=approval]"

RECORDER = """(_el, args) => {
    // every message from the host: its arrival (epoch ms), the host's post time `at`, whether it names a review
    const now = () => performance.timeOrigin + performance.now();
    const rec = (window.__phoenixReview = { messages: [], drawn: null });
    if (!window.__phoenixReviewListening) {
        window.__phoenixReviewListening = true;
        window.addEventListener('message', (e) => {
            const r = window.__phoenixReview;
            const s = JSON.stringify(e.data);
            r.messages.push({ t: now(), at: e.data && typeof e.data.at === 'number' ? e.data.at : null,
                              review: s.includes('.review"'), approval: s.includes('approval'), bytes: s.length });
        });
    }
    const selector = args.selector;
    const seen = () => { if (rec.drawn === null && document.querySelector(selector)) rec.drawn = now(); };
    new MutationObserver(seen).observe(document.body, { childList: true, subtree: true, attributes: true });
    seen();
    return true;
}"""


def handler(body: dict[str, Any]) -> Any:
    """The fake's handler (its own process): a bash command over 200 files, or a one-file patch."""
    from tests.fake_anthropic import Reply, ToolUseBlock

    messages = body.get("messages", [])
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        text = content if isinstance(content, str) else " ".join(
            str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
        if messages[i].get("role") != "user":
            continue
        rounds = sum(1 for m in messages[i + 1:] if m.get("role") == "assistant")
        if REVIEW_TAG in text:
            return Reply.tool_reply(ToolUseBlock("bash", {"command": COMMAND})) if rounds == 0 else \
                Reply.text_reply("Reviewed.")
        if PATCH_TAG in text:
            patch = {"path": "one.txt", "patches": [{"operation": "append_eof", "newText": "more\n"}]}
            return Reply.tool_reply(ToolUseBlock("patch", patch)) if rounds == 0 else Reply.text_reply("Patched.")
    return Reply.text_reply("Ready.")


class _ReviewFake(_Fake):
    """The fake Anthropic server in its own process, answering through :func:`handler`."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_anthropic", "--port", "0", "--handler", "bench.vscode_review:handler"],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().split()[-1]


def _measure(chat: Any, selector: str, review: bool) -> dict[str, float]:
    rec = chat.d.call("evaluate", **chat.wv, fn="() => window.__phoenixReview")
    drawn = rec["drawn"]
    carrying = [m for m in rec["messages"] if m["t"] <= drawn and (m["review"] if review else m["approval"])]
    assert carrying, f"no message carried the {'review' if review else 'approval'} before it was drawn"
    last = carrying[-1]
    out = {"arrived_ms": drawn - last["t"], "bytes": float(last["bytes"])}
    if last["at"] is not None:
        out["posted_ms"] = drawn - last["at"]
    return out


def measure(runs: int) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    from tests.clients.vscode_real.chat import UNRESTRICTED, Chat, phoenix_settings
    from tests.clients.vscode_real.rig import extension_id, load_deps, package_extension, start_rig

    deps = load_deps()
    vsix = package_extension(deps)
    fake = _ReviewFake()
    files = {f"f{i:03d}.txt": f"file {i}\n" for i in range(FILES)}
    files["one.txt"] = "one\n"
    reviews: list[dict[str, float]] = []
    patches: list[dict[str, float]] = []
    try:
        with start_rig(vsix=vsix, extension_id=extension_id(), settings=phoenix_settings, env=fake.env(),
                       files=files, deps=deps) as rig:
            d = rig.driver
            assert d is not None
            chat = Chat(rig)
            d.call("goto", timeout=180)
            rig.wait_probe(timeout=180)
            chat.open()
            chat.widen()
            chat.wait_server_ready(timeout=180)
            chat.send("[[warmup]]")
            chat.wait_answer("Ready.", timeout=180)
            chat.wait_idle()
            d.call("command", title="Phoenix: Unrestrict (/execute)")
            chat.statusbar(UNRESTRICTED)
            for _ in range(runs):
                chat.send(REVIEW_TAG)
                chat.dialog("approval", timeout=120)  # the bash question
                d.call("evaluate", **chat.wv, fn=RECORDER, arg={"selector": REVIEW})
                chat.key("y")
                d.call("waitFor", **chat.wv, selector=REVIEW, timeout=180)
                reviews.append(_measure(chat, REVIEW, True))
                chat.refocus_dialog()
                chat.key("n")
                chat.dialog_closed()
                chat.wait_answer("Reviewed.", timeout=120)
                chat.wait_idle()
                d.call("evaluate", **chat.wv, fn=RECORDER, arg={"selector": DIALOG})
                chat.send(PATCH_TAG)
                chat.dialog("approval", timeout=120)
                patches.append(_measure(chat, DIALOG, False))
                chat.key("n")
                chat.dialog_closed()
                chat.wait_answer("Patched.", timeout=120)
                chat.wait_idle()
    finally:
        fake.stop()
    return reviews, patches


FROM = {"posted_ms": "the host's post", "arrived_ms": "its arrival in the webview"}


def figures(quick: bool = False, runs: int | None = None) -> list[dict[str, Any]]:
    """The figures (``python -m bench vscode_review`` calls this with ``quick``)."""
    reviews, patches = measure(runs or (3 if quick else 5))
    key = "posted_ms" if all("posted_ms" in r for r in reviews + patches) else "arrived_ms"
    review_ms = [r[key] for r in reviews]
    patch_ms = [p[key] for p in patches]
    return [
        {
            "name": f"real VS Code: a review of {FILES} changed files opens ({FROM[key]} -> review drawn, "
                    f"median of {len(review_ms)}; all: {', '.join(f'{v:.0f}' for v in review_ms)}; "
                    f"message {reviews[-1]['bytes'] / 1000:.0f} KB)",
            "value": round(statistics.median(review_ms), 1),
            "unit": "ms",
            "baseline_name": "a one-file patch approval opens, same way, same run (median)",
            "baseline_value": round(statistics.median(patch_ms), 1),
            "goal": "< 1000 ms",
            "met": statistics.median(review_ms) < 1000,
        },
        {
            "name": "of which: the review's message arrived in the webview -> drawn (median)",
            "value": round(statistics.median(r["arrived_ms"] for r in reviews), 1),
            "unit": "ms",
            "baseline_name": "one-file patch approval (median)",
            "baseline_value": round(statistics.median(p["arrived_ms"] for p in patches), 1),
        },
    ]


def main(argv: list[str] | None = None) -> int:
    from bench.__main__ import print_table

    parser = argparse.ArgumentParser(prog="python -m bench.vscode_review")
    parser.add_argument("--runs", type=int, default=5, help="reviews (and patch approvals) opened (default 5)")
    args = parser.parse_args(argv)
    print("## vscode review (real VS Code)")
    print_table(figures(runs=args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
