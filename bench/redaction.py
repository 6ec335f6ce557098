"""The stream redactor (REQ-SEC-041), beside a baseline measured in the same run.

A model's answer of about 200,000 tokens (800 KB) in 4-character text deltas, with five secrets known (the
provider keys and registered credentials of a busy server): each delta through the stream redactor (which holds
back what could start a secret), against each delta redacted on its own by ``SecretGuard.redact`` (what every
event already cost). A second figure makes the text hostile: every delta ends with the first half of a key, so
the redactor holds back and decides at every step. A third repeats two known secrets, one inside the other,
5,000 times each in one big delta.

And the log's formatter (REQ-SEC-042) on a 1 MB line built to make a URL pattern rescan from every character
(``a.a.a.a...``: each one could start a URL's scheme) and on one full of credential-like names, against a 1 MB
line of prose: a hostile line must cost what any line of its size costs.
"""

from __future__ import annotations

import time
from typing import Any

from phoenix_lsp.log_redact import scrub
from phoenix_lsp.store import SecretGuard
from phoenix_lsp.store.stream_redact import StreamRedactor

KEYS = ["sk-ant-api03-" + "Zx9" * 30, "sk-proj-" + "Qw7" * 20, "rtr-bench-4b1d9f0c7a2e6d58",
        "ghp_" + "a1B2" * 9, "url-tok-5Kq8Zr3Wm0Hx"]


def _guard() -> SecretGuard:
    guard = SecretGuard(environ={})
    for key in KEYS:
        guard.add_secret(key)
    return guard


def _per_delta_us(deltas: list[str], run: Any) -> float:
    """Microseconds per item of the best of three runs of ``run`` over ``deltas``."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        run(deltas)
        best = min(best, time.perf_counter() - t0)
    return best / len(deltas) * 1e6


def _scrub_each(lines: list[str]) -> None:
    for line in lines:
        scrub(line)


def figures(quick: bool = False) -> list[dict[str, Any]]:
    tokens = 20_000 if quick else 200_000
    words = ("the model writes ordinary prose about code, then " * (tokens * 4 // 49 + 1))[: tokens * 4]
    plain = [words[i:i + 4] for i in range(0, len(words), 4)]
    half = KEYS[0][: len(KEYS[0]) // 2]
    hostile = [p + half for p in plain[: len(plain) // 10]]
    guard = _guard()

    def streamed(deltas: list[str]) -> None:
        stream = StreamRedactor(guard)
        for d in deltas:
            stream.feed(d)
        stream.end()

    def alone(deltas: list[str]) -> None:
        for d in deltas:
            guard.redact(d)

    rows = []
    for name, deltas in ((f"{tokens:,} tokens of prose in 4-character deltas", plain),
                         (f"{len(hostile):,} deltas each ending with half a key (held back every time)", hostile)):
        rows.append({
            "name": f"stream redactor, per delta: {name}, {len(KEYS)} secrets known",
            "value": round(_per_delta_us(deltas, streamed), 2),
            "unit": "us",
            "baseline_name": "the same deltas each redacted alone (SecretGuard.redact), per delta",
            "baseline_value": round(_per_delta_us(deltas, alone), 2),
            "goal": "",
        })
    # a model that repeats the keys it knows (one inside the other) in one big delta
    inner = KEYS[0][13:25]
    repeated = [(KEYS[0] + " " + inner + " ") * 5000]
    guard.add_secret(inner)
    rows.append({
        "name": f"stream redactor on one {len(repeated[0]) // 1000} KB delta repeating two known secrets (one inside "
                "the other) 5,000 times each",
        "value": round(_per_delta_us(repeated, streamed) / 1000, 2),
        "unit": "ms",
        "baseline_name": "the same delta redacted alone (SecretGuard.redact)",
        "baseline_value": round(_per_delta_us(repeated, alone) / 1000, 2),
        "goal": "",
    })
    size = 1_000_000
    prose = ("the server answered the request in a few milliseconds " * (size // 54 + 1))[:size]
    for name, line in (("a.a.a.a...", ("a." * (size // 2))[:size]),
                       ("token=x token=x ...", ("token=x " * (size // 8))[:size])):
        rows.append({
            "name": f"log formatter's scrub of a 1 MB line of {name}",
            "value": round(_per_delta_us([line], _scrub_each) / 1000, 2),
            "unit": "ms",
            "baseline_name": "the same on a 1 MB line of prose",
            "baseline_value": round(_per_delta_us([prose], _scrub_each) / 1000, 2),
            "goal": "",
        })
    return rows
