"""The restricted seccomp filter, run in a classic-BPF interpreter for every syscall number: the decision
for each (syscall, arguments) is the policy written in specs/bash.md, whatever the program's layout."""

from __future__ import annotations

import errno
import struct

import pytest

from phoenix_lsp.sandbox import kernel, seccomp

ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS, EOPNOTSUPP = (0x00050000 | e for e in (errno.EPERM, errno.ENOSYS, errno.EOPNOTSUPP))


def run(program: bytes, nr: int, args: tuple[int, ...] = (), arch: int | None = None,
        machine: str = "x86_64") -> int:
    """What the kernel would return for this syscall."""
    return execute(program, nr, args, arch, machine)[0]


def execute(program: bytes, nr: int, args: tuple[int, ...] = (), arch: int | None = None,
            machine: str = "x86_64") -> tuple[int, int]:
    """The return value for this syscall and how many instructions gave it: a small interpreter of the
    instructions seccomp accepts (loads of struct seccomp_data, ALU and, conditional and unconditional forward
    jumps, returns)."""
    words = [0] * 16  # struct seccomp_data: nr, arch, ip (2 words), args (6 x 2 words)
    words[0], words[1] = nr, seccomp._AUDIT_ARCH[machine] if arch is None else arch
    for i, value in enumerate(args):
        words[4 + 2 * i], words[5 + 2 * i] = value & 0xFFFFFFFF, value >> 32
    ins = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    for step in range(1, len(ins) + 1):  # forward jumps only: at most one pass
        code, jt, jf, k = ins[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k < 64
            acc, pc = words[k // 4], pc + 1
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc, pc = acc & k, pc + 1
        elif code == 0x05:  # BPF_JMP | BPF_JA
            pc += 1 + k
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET with K
            hit = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k, step
        else:
            raise AssertionError(f"instruction {code:#x} at {pc} is not expected in this filter")
    raise AssertionError("the program ran off its end")


def expected(name: str | None, args: tuple[int, ...], deny_memfd: bool) -> int:
    """The policy (specs/bash.md REQ-BASH-008, issue 12), stated independently of the program."""
    a = [*args, 0, 0, 0, 0, 0, 0]
    denied = {n for names in seccomp.DENIED_SYSCALLS.values() for n in names}
    if name in denied or (deny_memfd and name == "memfd_create"):
        return EPERM
    if name in ("clone3", *seccomp.SHARED_LIMIT_SYSCALLS):
        return ENOSYS
    if name in ("socket", "socketpair"):
        return ALLOW if (a[0] & 0xFFFFFFFF) == seccomp.AF_UNIX and (a[1] & 0xF) in (1, 5) else EPERM
    if name == "ioctl":
        return EPERM if (a[1] & 0xFFFFFFFF) in (seccomp.TIOCSTI, seccomp.TIOCLINUX, *seccomp.METADATA_IOCTLS) else ALLOW
    if name == "fcntl":
        return EPERM if (a[1] & 0xFFFFFFFF) == seccomp.F_SETLEASE else ALLOW
    if name == "clone":
        return EPERM if a[0] & seccomp.CLONE_NAMESPACE_FLAGS else ALLOW
    if name == "prlimit64":
        return ALLOW if a[0] == 0 else EPERM
    if name in ("setpriority", "ioprio_set"):
        which = seccomp.PRIO_PROCESS if name == "setpriority" else seccomp.IOPRIO_WHO_PROCESS
        return ALLOW if (a[0] & 0xFFFFFFFF) == which and (a[1] & 0xFFFFFFFF) == 0 else EPERM
    if name in seccomp.SELF_ONLY_BY_PID:
        return ALLOW if (a[0] & 0xFFFFFFFF) == 0 else EPERM
    if name == "fallocate":
        return ALLOW if (a[1] & 0xFFFFFFFF) == 0 else EOPNOTSUPP
    return ALLOW


ARGS = [(), (1, 1), (1, 5), (1, 2), (2, 1), (1 | 1 << 32, 1), (0, 0), (0, 5), (5, 0), (1, 0), (1 << 32, 0),
        (0, seccomp.TIOCSTI), (3, seccomp.TIOCSTI), (3, seccomp.TIOCSTI | 1 << 32), (3, seccomp.TIOCLINUX),
        *((3, cmd) for cmd in seccomp.METADATA_IOCTLS), (3, seccomp.F_SETLEASE), (3, 1026), (0x11, 0),
        (0x10000000, 0), (0x01200011, 0), (3, 1), (3, 3), (seccomp.PRIO_PROCESS, 7), (2, 0)]


@pytest.mark.req("REQ-BASH-008")
@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("deny_memfd", [False, True])
def test_every_syscall_gets_the_policys_decision(machine: str, deny_memfd: bool) -> None:
    program = seccomp.seccomp_program(machine, deny_memfd)
    names = {nr: name for name, nr in seccomp._SYSCALLS[machine].items()}
    for nr in range(max(names) + 64):
        for args in ARGS if nr in names else [(), (1, 2)]:
            assert run(program, nr, args, machine=machine) == expected(names.get(nr), args, deny_memfd), (
                names.get(nr, nr), args)
    assert run(program, 0, arch=0x40000003, machine=machine) == KILL  # i386 through int 0x80
    if machine == "x86_64":
        assert run(program, 0x40000000 | 1) == EPERM  # x32


@pytest.mark.req("REQ-BASH-008")
def test_the_filter_is_small_enough_to_install_fast() -> None:
    """Installing a filter costs about 2.7 us per instruction the kernel must evaluate for each syscall
    number (its action cache is built by running the filter ~460 times): a linear chain of ~140
    comparisons cost ~0.2-0.4 ms per command. A binary search keeps every path short."""
    for machine in ("x86_64", "aarch64"):
        program = seccomp.seccomp_program(machine)
        names = {nr: name for name, nr in seccomp._SYSCALLS[machine].items()}
        longest = max(execute(program, nr, machine=machine)[1] for nr in range(max(names) + 64))
        assert longest <= 32, longest  # 121 with the linear chain



@pytest.mark.req("REQ-BASH-009")
def test_the_probe_knows_the_architectures_the_filter_has_tables_for() -> None:
    """probe() asks kernel.py whether the filter can be made here, without loading the filter's tables: the
    architectures it names are exactly those tables' (a table added without it would never be used, one removed
    would leave a machine reported protected)."""
    assert set(kernel.AUDIT_ARCH) == set(seccomp._SYSCALLS)
    assert seccomp.seccomp_supported_arch is kernel.seccomp_supported_arch
    assert seccomp.seccomp_available is kernel.seccomp_available
