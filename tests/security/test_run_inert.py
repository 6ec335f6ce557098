"""``phoenix-lsp run``'s words for a person are made inert (REQ-SEC-004): its text answer on stdout and its messages
on stderr are what a person reads in a terminal, and both may carry what a hostile party chose (a file the model
read can steer its answer; a model service's, or a proxy's, error text is quoted in the message). The real command
in a subprocess against the fake Anthropic API; the witnesses are the bytes the run wrote: no escape sequence
(ESC, the one-character CSI U+009B) and no lone carriage return reaches them, nor the log file's lines (one
formatter for every log line, REQ-SEC-042), the text is still there, made visible."""

from __future__ import annotations

import pytest

from tests.fake_anthropic import FakeAnthropic, Reply
from tests.run.harness import Runner, run, run_env

__all__ = ["run", "run_env"]  # the fixtures

pytestmark = pytest.mark.slow  # each test starts the run as a subprocess

#: a clipboard write (OSC 52), a screen clear by the one-character CSI, and a line overwritten by a carriage return
HOSTILE = "done\x1b]52;c;cm0gLXJmIH4=\x07 and \x9b2J cleared\rFAKE"


def _inert(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text, f"a control sequence reached the terminal: {text!r}"
    assert "\r" not in text.replace("\r\n", ""), f"a lone carriage return reached the terminal: {text!r}"


@pytest.mark.req("REQ-SEC-004")
def test_a_runs_text_answer_reaches_the_terminal_inert(run: Runner, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply(HOSTILE))
    done = run("summarize the notes")
    assert done.returncode == 0, done.stderr
    _inert(done.stdout)
    assert "done" in done.stdout and "cleared" in done.stdout and "FAKE" in done.stdout
    assert "␛]52;c;cm0gLXJmIH4=␇" in done.stdout, done.stdout


@pytest.mark.req("REQ-SEC-004")
def test_a_runs_error_message_quoting_the_service_reaches_the_terminal_inert(run: Runner,
                                                                            fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.error(400, f"bad request {HOSTILE}", "invalid_request_error"))
    done = run("summarize the notes")
    assert done.returncode == 1, (done.stdout, done.stderr)
    _inert(done.stderr)
    assert "bad request" in done.stderr and "FAKE" in done.stderr, done.stderr
    log = (run.data / "phoenix-lsp.log").read_text(encoding="utf-8")  # the log file, read in a terminal too
    assert "bad request" in log, log
    _inert(log)
