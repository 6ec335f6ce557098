"""Where the agent route's time goes, one log line per unit, plan, call or MCP call (issue 37's breakdown: an
MCP call's ``answer``, the server's time and the SDK's reading, apart from our ``gate`` on its result).

A :class:`Stopwatch` is started when the work starts; each :meth:`Stopwatch.mark` charges the time since the previous
mark to a named part (parts named twice add up); :meth:`Stopwatch.log` writes one INFO line, ``timing <what>:
part=1.2ms ...``, which ``bench agent_tasks`` reads from the server's log to split "our time" (the time between
the model's last byte and the answer) into its parts. Durations only, on the monotonic clock; no payload, no
argument, no name of a tool: nothing a log must not hold.
"""

from __future__ import annotations

import logging
import time


class Stopwatch:
    """The parts of one piece of work, in milliseconds (not thread-safe: one per thread of work)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.parts: dict[str, float] = {}
        self.start = self._last = time.monotonic()

    def mark(self, part: str) -> None:
        """The time since the last mark (or the start) was spent in ``part``."""
        now = time.monotonic()
        self.parts[part] = self.parts.get(part, 0.0) + (now - self._last) * 1000
        self._last = now

    def line(self) -> str:
        return (f"timing {self.what}: " + " ".join(f"{part}={ms:.1f}ms" for part, ms in self.parts.items())
                + f" (from {self.start:.4f} s)")

    def log(self, logger: logging.Logger) -> None:
        if self.parts:
            logger.info("%s", self.line())
