"""A tiny classic-BPF assembler: what the seccomp filters (``seccomp.py``) are written with.

Classic BPF only jumps forward; labels let a program name its targets and the offsets are resolved when it is
assembled, so no third-party binding nor the libseccomp headers are needed.
"""

from __future__ import annotations

import struct

# seccomp's return actions, then the classic-BPF opcodes the filters use
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
LD_ABS_W = 0x20
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
AND_K = 0x54
RET_K = 0x06
JA = 0x05


class Assembler:
    """A tiny classic-BPF assembler with forward labels (jump offsets are resolved at the end)."""

    def __init__(self) -> None:
        self.ins: list[tuple[int, int | str, int | str, int | str]] = []
        self.labels: dict[str, int] = {}
        self._fresh = 0

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.ins.append((code, jt, jf, k))

    def jump(self, target: str) -> None:
        """An unconditional jump (BPF_JA): its 32-bit offset reaches any later instruction."""
        self.ins.append((JA, 0, 0, target))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ins)

    def fresh(self, stem: str) -> str:
        self._fresh += 1
        return f"{stem}.{self._fresh}"

    def assemble(self) -> bytes:
        out = bytearray()
        for i, (code, jt, jf, k) in enumerate(self.ins):
            offs = []
            for target in (jt, jf):
                if isinstance(target, str):
                    off = self.labels[target] - (i + 1)
                    if not 0 <= off <= 255:
                        raise ValueError(f"BPF jump to {target} out of range ({off})")
                    offs.append(off)
                else:
                    offs.append(target)
            value = self.labels[k] - (i + 1) if isinstance(k, str) else k
            out += struct.pack("=HBBI", code, offs[0], offs[1], value & 0xFFFFFFFF)
        return bytes(out)

    def search(self, actions: list[tuple[int, int]], leaf: int = 8) -> None:
        """Return the action of the syscall number in the accumulator: a binary search over `actions`
        ((number, return value), sorted by number), allowing every number it does not list. Each path is
        a few comparisons long, so the kernel builds its per-syscall action cache quickly (it runs the
        filter once per syscall number when the filter is installed, on every command). The return
        instructions follow the search, in reach of every comparison."""
        returns = {value: self.fresh("ret") for value in sorted({value for _, value in actions})}

        def node(part: list[tuple[int, int]]) -> None:
            if len(part) <= leaf:
                for number, value in part:
                    self.op(JEQ_K, number, returns[value], 0)
                self.op(RET_K, RET_ALLOW)
                return
            middle = len(part) // 2
            upper = self.fresh("upper")
            self.op(JGE_K, part[middle][0], upper, 0)
            node(part[:middle])
            self.label(upper)
            node(part[middle:])

        node(actions)
        for value, name in returns.items():
            self.label(name)
            self.op(RET_K, value)
