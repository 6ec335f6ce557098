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


@pytest.fixture(autouse=True)
def fresh_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test builds what the reader caches (the syscall, the openat2 arguments, the probe), so the code
    that builds them is proven too, not only the copies an earlier test left behind."""
    monkeypatch.setattr(confined, "_syscall_fn", None)
    monkeypatch.setattr(confined, "_hows", {})
    monkeypatch.setattr(confined, "_openat2_works", None)
    confined._prefixes.cache_clear()


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


def says_what(why: confined.ReadRefused, asked: str, *roots: Path) -> confined.ReadRefused:
    """A refusal names the path asked for (its ``path`` and its message), and an ``outside`` one the root."""
    assert why.path == asked
    assert asked in str(why)
    if why.reason == "outside" and roots:
        assert any(str(root) in str(why) for root in roots), str(why)
    return why


def refused(root: Path, path: str, max_bytes: int = 1 << 20, deny: DenyCheck | None = None) -> confined.ReadRefused:
    with pytest.raises(confined.ReadRefused) as caught:
        read(root, path, max_bytes, deny)
    return says_what(caught.value, path, root)


def refused_beneath(path: str | Path, roots: list[Path | str], max_bytes: int = 1 << 20,
                    deny: DenyCheck | None = None) -> confined.ReadRefused:
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read(path, roots, max_bytes=max_bytes, deny=deny)
    return says_what(caught.value, str(path), *(Path(r) for r in roots))


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
    why = refused_beneath(path, ["/"])
    assert why.reason == "denied" and why.entry == "/" + path.split("/")[1]


@pytest.mark.req("REQ-READ-004")
def test_a_symlink_to_proc_inside_the_root_is_refused(how: str, tmp_path: Path) -> None:
    (tmp_path / "env").symlink_to("/proc/self/environ")
    with pytest.raises(confined.ReadRefused) as caught:
        confined.read(tmp_path / "env", [tmp_path], max_bytes=1 << 20)
    assert caught.value.reason == "outside"
    assert refused_beneath("/tmp/../proc/self/environ", ["/"]).reason == "denied"
    # a relative symlink that stays beneath the root "/" but lands in /proc: caught on the path really opened
    (tmp_path / "env-rel").symlink_to("../" * len(tmp_path.parts[1:]) + "proc/self/environ")
    why = refused_beneath(tmp_path / "env-rel", ["/"])
    assert (why.reason, why.entry) == ("denied", "/proc")


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
    def no_openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
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


def without_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take NEVER_READ out of the way, to prove on procfs what it would otherwise hide."""
    monkeypatch.setattr(confined, "NEVER_READ", ())


@pytest.mark.req("REQ-READ-003")
def test_a_file_whose_size_is_unknown_is_read_whole_and_capped_on_its_bytes(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # /proc/sys/kernel/ostype ("Linux\n") reports st_size 0: read in several chunks, joined as they came
    without_never_read(monkeypatch)
    path = "/proc/sys/kernel/ostype"
    data = Path(path).read_bytes()
    assert os.stat(path).st_size == 0 and len(data) > 1
    assert confined.read(path, ["/proc"], max_bytes=len(data)).data == data
    why = refused_beneath(path, ["/proc"], max_bytes=len(data) - 1)
    assert (why.reason, why.limit) == ("too_large", len(data) - 1)


@pytest.mark.req("REQ-READ-003")
def test_a_file_that_fails_to_read_is_unreadable_with_the_system_s_words(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # /proc/self/mem is a regular file whose first bytes (address 0) cannot be read: EIO
    without_never_read(monkeypatch)
    why = refused_beneath("/proc/self/mem", ["/proc"])
    assert (why.reason, why.cause) == ("unreadable", os.strerror(errno.EIO))


@pytest.mark.req("REQ-READ-002")
def test_a_path_through_a_symlinked_root_is_read_and_checked_at_its_real_place(how: str, tree: Path) -> None:
    """The root named through a symlink (a workspace opened by a linked path): the file's real path is
    reported, and the deny-read list (which holds real paths) is checked on it."""
    alias = tree.parent / "alias"
    alias.symlink_to(tree)
    (tree / "creds").mkdir()
    (tree / "creds" / "key").write_text("PRIVATE\n")
    deny = DenyCheck([tree / "creds"])
    with confined.Root(alias, deny=deny) as beneath:
        got = beneath.read(str(alias / "sub" / "f.txt"), max_bytes=100)
        assert got == (b"inside\n", str(tree / "sub" / "f.txt"))
        with pytest.raises(confined.ReadRefused) as caught:
            beneath.read(str(alias / "creds" / "key"), max_bytes=100)
        assert (caught.value.reason, caught.value.entry) == ("denied", str(tree / "creds"))
        assert says_what(caught.value, str(alias / "creds" / "key"))
        assert beneath.holds(str(alias / "sub" / "f.txt")) == "sub/f.txt"
        assert beneath.holds(str(tree / "sub" / "f.txt")) == "sub/f.txt"
        assert beneath.holds(str(alias)) == "."
        assert beneath.holds(str(tree.parent / "out" / "secret")) is None
    assert refused(tree, str(tree)).reason == "not_regular"  # the root itself, spelt absolutely


@pytest.mark.req("REQ-READ-002")
def test_names_made_of_the_characters_the_reader_strips(how: str, tmp_path: Path) -> None:
    root = tmp_path / "X"  # a root whose name ends, and a file whose name starts, with a letter
    root.mkdir()
    (root / "X").write_text("x\n")
    assert confined.read(root / "X", [root], max_bytes=10) == (b"x\n", str(root / "X"))
    assert read(root, str(root / "X")).data == b"x\n"


@pytest.mark.req("REQ-READ-002")
def test_the_first_root_that_holds_the_path_is_used_with_its_deny_list(how: str, tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert confined.read(tree / "sub" / "f.txt", [other, tree], max_bytes=100).data == b"inside\n"
    deny = DenyCheck([tree / "sub"])
    why = refused_beneath(tree / "sub" / "f.txt", [other, tree], deny=deny)
    assert (why.reason, why.entry) == ("denied", str(tree / "sub"))
    assert refused_beneath(tree / "sub" / "f.txt", [other]).reason == "outside"
    assert "no directory" in str(refused_beneath(tree / "sub" / "f.txt", []))
    gone = tmp_path / "gone"  # a root that does not exist: nothing beneath it can be read
    assert refused_beneath(gone / "f.txt", [gone]).reason == "missing"


@pytest.mark.req("REQ-READ-002")
def test_a_root_must_be_a_directory(tree: Path) -> None:
    with pytest.raises(NotADirectoryError):
        confined.Root(tree / "sub" / "f.txt")


@pytest.mark.req("REQ-READ-005")
async def test_on_the_event_loop_the_deny_list_still_applies(tree: Path) -> None:
    deny = DenyCheck([tree / "sub"])
    why = refused_beneath(tree / "sub" / "f.txt", [tree], deny=deny)
    assert why.reason == "denied"
    with confined.Root(tree, deny=deny) as beneath, pytest.raises(confined.ReadRefused) as caught:
        beneath.read("sub/deep/g.txt", max_bytes=100)
    assert says_what(caught.value, "sub/deep/g.txt").reason == "denied"


@pytest.mark.req("REQ-READ-005")
async def test_reads_on_the_loop_that_hang_hold_at_most_four_named_threads(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    names: list[str] = []

    def hang(fd: int, asked: str, size: int, max_bytes: int) -> bytes:
        names.append(threading.current_thread().name)
        release.wait(60)  # a file system that does not answer
        return b""

    monkeypatch.setattr(confined, "_read_capped", hang)
    monkeypatch.setattr(confined, "_workers", None)
    monkeypatch.setattr(confined, "LOOP_WAIT_S", 0.1)
    try:
        for _ in range(6):
            why = refused_beneath(tree / "sub" / "f.txt", [tree])
            assert why.reason == "unreadable" and why.cause == "it took longer than 0.1 s"
        with confined.Root(tree) as beneath, pytest.raises(confined.ReadRefused) as caught:
            beneath.read("sub/f.txt", max_bytes=100)
        assert says_what(caught.value, "sub/f.txt").reason == "unreadable"
        assert len(set(names)) == 4 and all(n.startswith("confined-read") for n in names)
    finally:
        release.set()


@pytest.mark.req("REQ-READ-002")
def test_openat2_confines_the_lookup_itself(tree: Path) -> None:
    """The kernel, not the reader's later checks, refuses a lookup that leads out (RESOLVE_BENEATH), through
    a /proc magic link (RESOLVE_NO_MAGICLINKS), or through any symlink when asked (RESOLVE_NO_SYMLINKS)."""
    confined.use_walk(False)
    if confined.mechanism() != "openat2":
        pytest.skip("this kernel has no openat2")
    flags = os.O_RDONLY | os.O_CLOEXEC
    with confined.Root(tree) as beneath:
        for path in ("link-out", "abs-in", "../out/secret", "dir-out/secret"):
            with pytest.raises(OSError) as caught:
                confined._openat2(beneath._fd, path, flags, 0)
            assert caught.value.errno == errno.EXDEV, path
        os.close(confined._openat2(beneath._fd, "link-in", flags, 0))
        with pytest.raises(OSError) as caught:
            confined._openat2(beneath._fd, "link-in", flags, confined._RESOLVE_NO_SYMLINKS)
        assert caught.value.errno == errno.ELOOP
        with pytest.raises(OSError) as caught:
            confined._openat2(beneath._fd, "nothing-here", flags, 0)
        assert (caught.value.errno, caught.value.strerror, caught.value.filename) == (
            errno.ENOENT, os.strerror(errno.ENOENT), "nothing-here")
    with confined.Root("/proc/self") as beneath:
        with pytest.raises(OSError) as caught:
            confined._openat2(beneath._fd, "cwd", os.O_PATH | os.O_CLOEXEC, 0)
        assert caught.value.errno in (errno.ELOOP, errno.EXDEV)


@pytest.mark.req("REQ-READ-002")
def test_a_path_without_symlinks_is_opened_in_one_lookup_and_never_asked_about(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path: no symlink on the way (a '..' included), one openat2 and no readlink of /proc/self/fd;
    a symlink on the way: the full lookup, and the kernel says where it led."""
    confined.use_walk(False)
    if confined.mechanism() != "openat2":
        pytest.skip("this kernel has no openat2")
    lookups: list[int] = []
    asked_where: list[int] = []
    real_openat2, real_path = confined._openat2, confined._real_path

    def count_lookup(dir_fd: int, path: str, flags: int, resolve: int) -> int:
        lookups.append(resolve)
        return real_openat2(dir_fd, path, flags, resolve)

    def count_where(fd: int, asked: str) -> str:
        asked_where.append(fd)
        return real_path(fd, asked)

    monkeypatch.setattr(confined, "_openat2", count_lookup)
    monkeypatch.setattr(confined, "_real_path", count_where)
    for path in ("sub/f.txt", "sub/deep/../f.txt"):
        assert read(tree, path) == (b"inside\n", str(tree / "sub" / "f.txt"))
    assert lookups == [confined._RESOLVE_NO_SYMLINKS] * 2 and asked_where == []
    assert read(tree, "link-in") == (b"inside\n", str(tree / "sub" / "f.txt"))
    assert lookups[2:] == [confined._RESOLVE_NO_SYMLINKS, 0] and len(asked_where) == 1


@pytest.mark.req("REQ-READ-002")
def test_a_lookup_a_rename_raced_is_tried_again_then_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    confined.use_walk(False)
    if confined.mechanism() != "openat2":
        pytest.skip("this kernel has no openat2")
    real_openat2 = confined._openat2
    busy = [2]
    full: list[str] = []

    def racing(dir_fd: int, path: str, flags: int, resolve: int) -> int:
        if resolve == 0:
            full.append(path)
            if busy[0]:
                busy[0] -= 1
                raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN), path)
        return real_openat2(dir_fd, path, flags, resolve)

    monkeypatch.setattr(confined, "_openat2", racing)
    assert read(tree, "link-in").data == b"inside\n"  # two EAGAINs, then the lookup went through
    assert len(full) == 3
    busy[0], full[:] = 1000, []
    why = refused(tree, "link-in")
    assert (why.reason, why.cause) == ("unreadable", os.strerror(errno.EAGAIN))
    assert len(full) == confined._LOOKUP_TRIES == 8


@pytest.mark.req("REQ-READ-004")
def test_where_the_kernel_cannot_say_where_a_file_is_it_is_not_read(
        how: str, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE (labelled): /proc cannot be unmounted here, so readlink of /proc/self/fd/N is made to fail, and
    then to name a place outside the root (what a confined lookup never yields: the check behind it)."""
    real_readlink = os.readlink

    def no_proc(path: str, *args: object, **kwargs: object) -> str:
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return real_readlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "readlink", no_proc)
    why = refused(tree, "link-in")
    assert why.reason == "unreadable" and "is /proc mounted?" in str(why)

    def deleted(path: str, *args: object, **kwargs: object) -> str:  # the file was unlinked once opened
        where = real_readlink(path, *args, **kwargs)  # type: ignore[arg-type]
        return where + " (deleted)" if str(path).startswith("/proc/self/fd/") else where

    monkeypatch.setattr(os, "readlink", deleted)
    assert read(tree, "link-in").real == str(tree / "sub" / "f.txt")
    monkeypatch.setattr(os, "readlink", real_readlink)
    monkeypatch.setattr(confined, "_real_path", lambda fd, asked: str(tree.parent / "out" / "secret"))
    why = refused(tree, "link-in")
    assert why.reason == "outside" and str(tree.parent / "out" / "secret") in str(why)


@pytest.mark.req("REQ-READ-002")
def test_closing_a_root_twice_closes_nothing_else(tree: Path) -> None:
    beneath = confined.Root(tree)
    beneath.close()
    beneath.close()
    os.fstat(0), os.fstat(1)  # still open: a second close touched no other descriptor
