"""The confined reader (phoenix_lsp/confined.py, specs/reading.md): every rule proven through openat2 and through
the O_NOFOLLOW walk that replaces it on kernels without it (forced here with ``use_walk``)."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from phoenix_lsp import confined
from phoenix_lsp.sandbox.denylist import DenyCheck

#: reads made while a thread swaps a directory for a symlink (fewer under mutation testing: once per mutant)
RACE_READS = 200 if "MUTANT_UNDER_TEST" in os.environ else 3000


@pytest.fixture(params=["openat2", "walk"])
def how(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "openat2":
        confined.use_walk(False)
        if confined.mechanism() != "openat2":
            pytest.skip("this kernel has no openat2")
    else:
        confined.use_walk(True)
    assert confined.mechanism() == request.param
    yield request.param
    confined.use_walk(False)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ (the allowed directory) with files and links in and out; out/secret beside it."""
    root, out = tmp_path / "root", tmp_path / "out"
    (root / "sub" / "deep").mkdir(parents=True)
    out.mkdir()
    (out / "secret").write_text("SECRET-OUTSIDE\n")
    (root / "sub" / "f.txt").write_text("inside\n")
    (root / "sub" / "deep" / "g.txt").write_text("deeper\n")
    (root / "link-in").symlink_to("sub/f.txt")
    (root / "dir-in").symlink_to("sub")
    (root / "sub" / "up-in").symlink_to("../sub/deep/g.txt")
    (root / "link-out").symlink_to("../out/secret")
    (root / "abs-out").symlink_to(out / "secret")
    (root / "abs-in").symlink_to(root / "sub" / "f.txt")  # absolute, though it lands inside: refused too
    (root / "dir-out").symlink_to(out)
    (root / "loop").symlink_to("loop")
    os.mkfifo(root / "fifo")
    return root


def read(root: Path, path: str, max_bytes: int = 1 << 20, deny: DenyCheck | None = None) -> confined.FileRead:
    with confined.Root(root, deny=deny) as beneath:
        return beneath.read(path, max_bytes=max_bytes)


def refused(root: Path, path: str, max_bytes: int = 1 << 20, deny: DenyCheck | None = None) -> confined.ReadRefused:
    with pytest.raises(confined.ReadRefused) as caught:
        read(root, path, max_bytes, deny)
    return caught.value


@pytest.mark.req("REQ-READ-002")
@pytest.mark.parametrize("path, text, real", [
    ("sub/f.txt", "inside\n", "sub/f.txt"),
    ("link-in", "inside\n", "sub/f.txt"),
    ("dir-in/f.txt", "inside\n", "sub/f.txt"),
    ("sub/up-in", "deeper\n", "sub/deep/g.txt"),
    ("sub/../sub/./f.txt", "inside\n", "sub/f.txt"),
])
def test_symlinks_that_stay_beneath_the_root_are_followed(how: str, tree: Path, path: str, text: str,
                                                           real: str) -> None:
    got = read(tree, path)
    assert got.data.decode() == text
    assert got.real == str(tree / real)  # the kernel's name for what was opened
    assert read(tree, str(tree / path)).data.decode() == text  # absolute spelling, the same


@pytest.mark.req("REQ-READ-002")
@pytest.mark.parametrize("path", ["link-out", "abs-out", "abs-in", "dir-out/secret", "../out/secret",
                                  "sub/../../out/secret"])
def test_a_path_that_leads_out_of_the_root_is_refused(how: str, tree: Path, path: str) -> None:
    why = refused(tree, path)
    assert why.reason == "outside"
    assert "outside" in str(why) and "Use a path" in str(why)  # what, why, what next


@pytest.mark.req("REQ-READ-002")
def test_an_absolute_path_elsewhere_is_refused_before_anything_is_opened(how: str, tree: Path) -> None:
    assert refused(tree, str(tree.parent / "out" / "secret")).reason == "outside"
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read(tree.parent / "out" / "secret", [tree], max_bytes=100)
    assert caught.value.reason == "outside"


@pytest.mark.req("REQ-READ-002")
def test_loops_and_missing_files_have_their_own_reasons(how: str, tree: Path) -> None:
    assert refused(tree, "loop").reason == "loop"
    assert refused(tree, "nothing-here").reason == "missing"
    assert refused(tree, "sub/f.txt/below").reason == "missing"


@pytest.mark.req("REQ-READ-003")
def test_only_regular_files_and_a_fifo_never_blocks(how: str, tree: Path) -> None:
    done = threading.Event()
    reasons: list[str] = []

    def attempt() -> None:
        reasons.append(refused(tree, "fifo").reason)
        reasons.append(refused(tree, "sub").reason)
        done.set()

    threading.Thread(target=attempt, daemon=True).start()
    assert done.wait(30), "reading a FIFO with no writer blocked"
    assert reasons == ["not_regular", "not_regular"]


@pytest.mark.req("REQ-READ-003")
def test_the_cap_counts_the_bytes_read(how: str, tree: Path) -> None:
    (tree / "big").write_bytes(b"x" * 1000)
    assert len(read(tree, "big", max_bytes=1000).data) == 1000
    why = refused(tree, "big", max_bytes=999)
    assert why.reason == "too_large" and why.limit == 999


@pytest.mark.req("REQ-READ-003")
def test_procfs_size_zero_does_not_lift_the_cap(how: str) -> None:
    # /proc/self/status reports st_size 0 but has hundreds of bytes; read with /proc as the root and no deny
    # list it would pass a cap trusting st_size. NEVER_READ refuses /proc first, so prove the cap on the bytes
    # read itself, with the check of NEVER_READ out of the way.
    assert os.stat("/proc/self/status").st_size == 0
    saved = confined.NEVER_READ
    try:
        confined.NEVER_READ = ()  # type: ignore[misc]
        with pytest.raises(confined.ReadRefused) as caught:
            confined.read("/proc/self/status", ["/proc"], max_bytes=16)
        assert caught.value.reason == "too_large"
    finally:
        confined.NEVER_READ = saved  # type: ignore[misc]


@pytest.mark.req("REQ-READ-004")
def test_the_deny_list_is_checked_on_the_path_really_opened(how: str, tree: Path) -> None:
    (tree / "creds").mkdir()
    (tree / "creds" / "key").write_text("PRIVATE\n")
    (tree / "innocent").symlink_to("creds/key")  # inside the root, so followed: the deny list must catch it
    deny = DenyCheck([tree / "creds"])
    for path in ("creds/key", "innocent"):
        why = refused(tree, path, deny=deny)
        assert why.reason == "denied" and why.entry == str(tree / "creds")
    assert read(tree, "sub/f.txt", deny=deny).data == b"inside\n"


@pytest.mark.req("REQ-READ-004")
@pytest.mark.parametrize("path", ["/proc/self/environ", "/proc/self/status", "/sys/kernel/osrelease"])
def test_process_kernel_and_device_state_is_never_read(how: str, path: str) -> None:
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read(path, ["/"], max_bytes=1 << 20)
    assert caught.value.reason == "denied"


@pytest.mark.req("REQ-READ-004")
def test_a_symlink_to_proc_inside_the_root_is_refused(how: str, tmp_path: Path) -> None:
    (tmp_path / "env").symlink_to("/proc/self/environ")
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read(tmp_path / "env", [tmp_path], max_bytes=1 << 20)
    assert caught.value.reason == "outside"
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read("/tmp/../proc/self/environ", ["/"], max_bytes=1 << 20)
    assert caught.value.reason == "denied"


@pytest.mark.req("REQ-READ-003")
def test_a_directory_swapped_for_a_symlink_mid_read_never_delivers_the_outside_file(how: str, tree: Path) -> None:
    """A racing process swaps root/race between a real directory and a symlink out, as fast as it can."""
    (tree / "race").mkdir()
    (tree / "race" / "secret").write_text("harmless\n")
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        race, spare, link = tree / "race", tree / "race-dir", tree / "race-link"
        link.symlink_to(tree.parent / "out")
        while not stop.is_set():
            os.rename(race, spare)
            os.rename(link, race)
            os.rename(race, link)
            os.rename(spare, race)
            swaps[0] += 1

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    seen: set[bytes] = set()
    try:
        with confined.Root(tree) as beneath:
            reads = 0
            # enough reads, enough swaps, and a read that went through between two swaps (so the race is real)
            while racer.is_alive() and reads < 1_000_000 and (
                    reads < RACE_READS or swaps[0] < 20 or b"harmless\n" not in seen):
                reads += 1
                try:
                    seen.add(beneath.read("race/secret", max_bytes=100).data)
                except confined.ReadRefused as why:
                    assert why.reason in ("outside", "missing")
    finally:
        stop.set()
        racer.join()
    assert swaps[0] > 0 and b"harmless\n" in seen  # the race ran, and reads went through between swaps
    assert b"SECRET-OUTSIDE\n" not in seen


@pytest.mark.req("REQ-READ-005")
async def test_on_the_event_loop_the_read_is_done_by_a_worker_and_waited_for_a_bounded_time(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []
    real = confined._read_capped

    def spy(fd: int, asked: str, size: int, max_bytes: int) -> bytes:
        threads.append(threading.get_ident())
        return real(fd, asked, size, max_bytes)

    monkeypatch.setattr(confined, "_read_capped", spy)
    monkeypatch.setattr(confined, "_workers", None)  # the worker pool is made on first need
    assert confined.read(tree / "sub" / "f.txt", [tree], max_bytes=100).data == b"inside\n"
    with confined.Root(tree) as beneath:
        assert beneath.read("sub/f.txt", max_bytes=100).data == b"inside\n"
    assert threads and loop_thread not in threads
    assert await asyncio.to_thread(lambda: read(tree, "sub/f.txt").data) == b"inside\n"

    release = threading.Event()

    def hang(fd: int, asked: str, size: int, max_bytes: int) -> bytes:
        release.wait(60)  # a file system that does not answer
        return b""

    monkeypatch.setattr(confined, "_read_capped", hang)
    monkeypatch.setattr(confined, "LOOP_WAIT_S", 0.2)
    try:
        with pytest.raises(confined.ReadRefused) as caught:
            confined.read(tree / "sub" / "f.txt", [tree], max_bytes=100)
        assert caught.value.reason == "unreadable" and "took longer" in str(caught.value)
    finally:
        release.set()


@pytest.mark.req("REQ-READ-002")
def test_the_walk_is_what_runs_when_openat2_is_missing(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_openat2(dir_fd: int, path: str, flags: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(confined, "_openat2", no_openat2)
    monkeypatch.setattr(confined, "_openat2_works", None)
    assert confined.mechanism() == "walk"
    assert read(tree, "link-in").data == b"inside\n"
    assert refused(tree, "link-out").reason == "outside"
    monkeypatch.setattr(confined, "_openat2_works", None)


@pytest.mark.req("REQ-READ-002")
def test_openat2_is_used_where_the_kernel_has_it() -> None:
    """Linux 5.6 added openat2; on such a kernel (x86_64, aarch64) the kernel confines the lookup itself."""
    import platform

    release = tuple(int(part) for part in platform.release().split(".")[:2] if part.isdigit())
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64") or release < (5, 6):
        pytest.skip("no openat2 on this kernel")
    confined.use_walk(False)
    saved = confined._openat2_works
    confined._openat2_works = None  # probe again (an earlier test may have probed already)
    try:
        assert confined.mechanism() == "openat2"
    finally:
        confined._openat2_works = saved


@pytest.mark.req("REQ-READ-002")
@pytest.mark.parametrize("code, reason", [
    (errno.EXDEV, "outside"), (errno.ELOOP, "loop"), (errno.ENOENT, "missing"), (errno.ENOTDIR, "missing"),
    (errno.ENXIO, "not_regular"), (errno.EISDIR, "not_regular"), (errno.EACCES, "unreadable"),
])
def test_each_system_error_has_its_reason(code: int, reason: str) -> None:
    why = confined._refusal(OSError(code, os.strerror(code)), "asked/path", "/the/root")
    assert (why.reason, why.path) == (reason, "asked/path")
    assert why.cause == (os.strerror(code) if reason == "unreadable" else None)
    assert "asked/path" in str(why)


@pytest.mark.req("REQ-READ-002")
def test_an_error_without_words_still_says_what_happened() -> None:
    assert confined._refusal(OSError("the disk went away"), "p", "/r").cause == "the disk went away"


@pytest.mark.req("REQ-READ-002")
@pytest.mark.parametrize("path", ["sub//f.txt", "./sub/./f.txt", "twice-linked"])
def test_empty_and_dot_components_are_skipped(how: str, tree: Path, path: str) -> None:
    (tree / "twice-linked").symlink_to(".//sub/./f.txt")
    assert read(tree, path).data == b"inside\n"


@pytest.mark.req("REQ-READ-002")
@pytest.mark.parametrize("path", [".", "sub/..", "sub/deep/../.."])
def test_a_path_that_ends_at_a_directory_is_not_regular(how: str, tree: Path, path: str) -> None:
    assert refused(tree, path).reason == "not_regular"


@pytest.mark.req("REQ-READ-002")
def test_forty_symlinks_in_a_row_are_followed_and_forty_one_are_a_loop(how: str, tree: Path) -> None:
    previous = "sub/f.txt"
    for i in range(41):
        (tree / f"hop{i}").symlink_to(previous)
        previous = f"hop{i}"
    assert read(tree, "hop39").data == b"inside\n"  # 40 links
    assert refused(tree, "hop40").reason == "loop"  # 41
