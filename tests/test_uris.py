"""The one URI rule and the session-folder rule (phoenix_lsp/uris.py, REQ-URI-001, REQ-URI-002), as tables and a
property. Pure and fast: this file is the mutation check's test of the module (scripts/mutation-check.py)."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phoenix_lsp import uris
from phoenix_lsp.uris import UriError, check_session_folder, file_path

pytestmark = pytest.mark.req("REQ-URI-001")

HOME = "/home/me"


@pytest.mark.parametrize(("given", "expected"), [
    ("file:///home/me/p/a.py", "/home/me/p/a.py"),
    ("FILE:///home/me/p/a.py", "/home/me/p/a.py"),
    ("File:///home/me/p/a.py", "/home/me/p/a.py"),
    ("fIlE:/home/me/p/a.py", "/home/me/p/a.py"),  # RFC 8089's form without an authority
    ("file://localhost/etc/passwd", "/etc/passwd"),
    ("file://LocalHost/etc/passwd", "/etc/passwd"),
    ("file:////etc//passwd", "/etc/passwd"),
    ("file:///p/./a/../b.py", "/p/b.py"),
    ("file:///p/%2e%2e/b.py", "/b.py"),  # decoded once, then normalised
    ("file:///p/%252e%252e/b.py", "/p/%2e%2e/b.py"),  # decoded once only
    ("file:///p/a%20b.py", "/p/a b.py"),
    ("file:///p/%C3%A9.py", "/p/\u00e9.py"),
    ("file:///p/a.py#L10", "/p/a.py"),
    ("file:///p/a.py?x=1", "/p/a.py"),
    ("file:///p/%23a.py", "/p/#a.py"),
    ("file:///", "/"),
    ("file:///p/a.py~", "/p/a.py~"),  # an editor's backup: the ~ is not at a part's start
    ("file:////Xa/b", "/Xa/b"),
    ("file:///p/a.py?x#y?z", "/p/a.py"),
    ("file:///p/a.py#x?y#z", "/p/a.py"),
    ("file:///" + "a" * (uris.MAX_CHARS - 8), "/" + "a" * (uris.MAX_CHARS - 8)),  # at the limit, taken
])
def test_a_file_uri_becomes_one_canonical_path(given: str, expected: str) -> None:
    assert file_path(given) == expected


@pytest.mark.parametrize(("given", "reason"), [
    ("file://127.0.0.1/etc/passwd", "host"),
    ("file://server/share/a.py", "host"),
    ("file://localhost:80/etc/passwd", "host"),
    ("file://user@localhost/etc/passwd", "host"),
    ("file://localhost.evil/etc/passwd", "host"),
    ("file://localhost/~/.ssh/id_rsa", "tilde"),
    ("file:///~/.ssh/id_rsa", "tilde"),
    ("file:///home/%7Eme/.ssh/id_rsa", "tilde"),  # decoded before it is looked at
    ("file:///home/~me/.ssh/id_rsa", "tilde"),
    ("file:relative/a.py", "relative"),
    ("file:", "relative"),
    ("file://", "relative"),
    ("file:///p/a%00.py", "nul"),
    ("file://" + "h" * 300 + "/p", "host"),
    ("untitled:Untitled-1", "not_file"),
    ("https://example.com/a.py", "not_file"),
    ("vscode-remote://ssh-remote+host/etc/passwd", "not_file"),
    ("/etc/passwd", "not_uri"),  # a bare path, where none is allowed
    ("~/.ssh/id_rsa", "not_uri"),
    ("", "not_uri"),
    ("file:///" + "a" * uris.MAX_CHARS, "too_long"),
])
def test_what_names_no_local_file_is_refused_with_a_reason(given: str, reason: str) -> None:
    with pytest.raises(UriError) as refused:
        file_path(given)
    assert refused.value.reason == reason
    said = str(refused.value)  # what was given, why, what to do
    assert said.startswith(repr(given[:200] + ("…" if len(given) > 200 else ""))) or reason == "too_long", said
    assert said.endswith(".") and (" give " in said.lower() or "use " in said.lower()), said


@pytest.mark.parametrize(("given", "expected"), [
    ("/etc/passwd", "/etc/passwd"),
    ("//etc/passwd", "/etc/passwd"),
    ("///etc/../etc/passwd", "/etc/passwd"),
    ("src/a.py", "/w/src/a.py"),
    ("./src//a.py", "/w/src/a.py"),
    ("../other/a.py", "/other/a.py"),  # resolved against the folder; whether it may be used is the caller's
    ("%2e%2e/a.py", "/w/%2e%2e/a.py"),  # a bare path is not percent-decoded
    ("FILE:///etc/passwd", "/etc/passwd"),
])
def test_a_bare_path_is_taken_where_allowed_and_read_against_the_folder(given: str, expected: str) -> None:
    assert file_path(given, base="/w", bare=True) == expected


@pytest.mark.parametrize(("given", "base", "reason"), [
    ("~/.ssh/id_rsa", "/w", "tilde"),
    ("~", "/w", "tilde"),
    ("~root/.ssh/id_rsa", "/w", "tilde"),
    ("src/~/a", "/w", "tilde"),
    ("src/a.py", None, "relative"),
    ("src/a.py", "relative/base", "relative"),
    ("a\0b", "/w", "nul"),
    ("", "/w", "empty"),
])
def test_a_bare_path_that_could_mean_a_home_or_has_no_folder_is_refused(given: str, base: str | None,
                                                                        reason: str) -> None:
    with pytest.raises(UriError) as refused:
        file_path(given, base=base, bare=True)
    assert refused.value.reason == reason
    assert str(refused.value).startswith(repr(given)) and "Give the file's" in str(refused.value)


@pytest.mark.parametrize(("given", "base", "expected"), [
    ("file:///w/link/../id_rsa", None, "/w/link/../id_rsa"), ("FILE://localhost//w/./a", None, "//w/./a"),
    ("link/../id_rsa", "/w", "/w/link/../id_rsa"), ("file:///w/%2e%2e/a", None, "/w/../a"),
])
def test_the_spelt_path_keeps_the_dots_the_kernel_resolves_after_links(given: str, base: str | None,
                                                                      expected: str) -> None:
    assert uris.spelt_path(given, base=base, bare=True) == expected
    assert file_path(given, base=base, bare=True) == uris.normal(expected)


def test_the_spelt_path_takes_a_bare_path_only_when_told() -> None:
    with pytest.raises(UriError) as refused:
        uris.spelt_path("/w/link/../id_rsa")
    assert refused.value.reason == "not_uri"


@pytest.mark.parametrize(("given", "inside"), [
    ("file:///w/a.py", True), ("file:///w", True), ("file:///w/../x/a.py", False), ("file:///wx/a.py", False),
    ("file:///x/a.py", False), ("file:////w/a.py", True),
])
def test_inside_is_checked_on_the_canonical_path(given: str, inside: bool) -> None:
    if inside:
        assert file_path(given, inside=["/w/"]).startswith("/w")
    else:
        with pytest.raises(UriError) as refused:
            file_path(given, inside=["/w/", "/y"])
        assert refused.value.reason == "outside"
        assert str(refused.value) == (f"{given!r} is outside the session's folders (/w/, /y), so it was not used. "
                                      "Use a file of the project.")


@pytest.mark.parametrize(("given", "expected"), [
    ("file:x", "file"), ("FILE:x", "file"), ("Untitled:x", "untitled"), ("a+b.c-d:x", "a+b.c-d"),
    ("/etc/passwd", None), ("1a:x", None), ("", None), ("~/x", None),
])
def test_the_scheme_is_read_without_regard_to_case(given: str, expected: str | None) -> None:
    assert uris.scheme(given) == expected


@pytest.mark.parametrize(("path", "folder", "expected"), [
    ("/a/b", "/a", True), ("/a", "/a", True), ("/a/", "/a", True), ("/ab", "/a", False), ("/", "/a", False),
    ("/a/b", "/", True), ("//a/b", "/a/", True), ("/a/../b", "/a", False), ("/w/a", "/wX", False),
])
def test_within_compares_canonical_names(path: str, folder: str, expected: bool) -> None:
    assert uris.within(path, folder) is expected


# ------------------------------------------------------------------------------ the session folder


@pytest.mark.req("REQ-URI-002")
@pytest.mark.parametrize(("given", "reason"), [
    ("/", "root"), ("//", "root"), ("///", "root"), ("/.", "root"), ("/..", "root"), ("//tmp/../", "root"),
    ("/tmp/..", "root"), ("/./.", "root"),
    (HOME, "home"), (HOME + "/", "home"), ("//home//me", "home"), (HOME + "/p/..", "home"), ("/home", "home"),
    ("/home/", "home"),
    ("relative", "relative"), ("", "relative"), ("./p", "relative"), ("~/p", "relative"), ("/p\0", "relative"),
    ("/" + "a" * uris.MAX_CHARS, "relative"),
])
def test_a_session_folder_that_would_confine_nothing_is_refused(given: str, reason: str) -> None:
    with pytest.raises(UriError) as refused:
        check_session_folder(given, [HOME])
    assert refused.value.reason == reason
    assert "give" in str(refused.value).lower()  # and what to do


@pytest.mark.req("REQ-URI-002")
@pytest.mark.parametrize(("given", "expected"), [
    (HOME + "/p", HOME + "/p"), ("//home/me/p/./", HOME + "/p"), ("/home/mee", "/home/mee"), ("/tmp", "/tmp"),
    ("/home/other", "/home/other"), ("/" + "a" * (uris.MAX_CHARS - 1), "/" + "a" * (uris.MAX_CHARS - 1)),
])
def test_a_project_folder_is_a_session_folder(given: str, expected: str) -> None:
    assert check_session_folder(given, [HOME, "relative-home-ignored", ""]) == expected


@pytest.mark.req("REQ-URI-002")
def test_the_real_path_of_a_session_folder_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "p").mkdir(parents=True)
    (tmp_path / "to-home").symlink_to(home)
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("HOME", str(home))
    assert uris.session_folder(str(tmp_path / "to-home" / "p")) == str(home / "p")
    for folder, reason in ((tmp_path / "to-home", "home"), (tmp_path / "missing", "missing"),
                          (tmp_path / "a-file", "missing"), (tmp_path, "home")):
        with pytest.raises(UriError) as refused:
            uris.session_folder(str(folder))
        assert refused.value.reason == reason, folder
        said = str(refused.value)  # names the folder as given, or the real one it leads to
        assert said.startswith((repr(str(folder)), repr(os.path.realpath(folder)))) and "give the" in said, said
    assert str(home) in uris.home_folders()
    monkeypatch.delenv("HOME")
    assert str(home) not in uris.home_folders() and all(h.startswith("/") for h in uris.home_folders())


@pytest.mark.parametrize(("given", "shown"), [
    ("a" * 200, repr("a" * 200)), ("a" * 201, repr("a" * 200 + "…")), ("", "''"),
])
def test_a_message_shows_at_most_200_characters_of_what_was_given(given: str, shown: str) -> None:
    assert uris._shown(given) == shown


# ------------------------------------------------------------------------------ the property


_PARTS = st.sampled_from(["a", "b", ".", "..", "", "~", "~x", "%2e%2e", "%2F", "%00", "x y", "\u00e9", "%7E",
                          "localhost", "?q", "#f", ":"])
_TEXTS = st.builds(lambda head, parts: head + "/".join(parts),
                   st.sampled_from(["", "/", "//", "file:", "file://", "file:///", "FILE://localhost/",
                                    "File://127.0.0.1/", "file://localhost", "http://", "~/"]),
                   st.lists(_PARTS, max_size=8))


@given(text=_TEXTS | st.text(max_size=60), base=st.sampled_from([None, "/w", "/w/x/..", "//w"]),
       bare=st.booleans(), inside=st.sampled_from([None, ["/w"], ["/w", "/v/"]]))
def test_whatever_the_input_a_path_returned_is_absolute_canonical_and_inside(text: str, base: str | None, bare: bool,
                                                                            inside: list[str] | None) -> None:
    try:
        path = file_path(text, base=base, bare=bare, inside=inside)
    except UriError:
        return
    assert path.startswith("/") and not path.startswith("//")
    assert posixpath.normpath(path) == path and uris.normal(path) == path
    assert "\0" not in path and not any(part.startswith("~") for part in path.split("/"))
    if inside is not None:
        assert any(path == f.rstrip("/") or path.startswith(f.rstrip("/") + "/") for f in inside)
    if not bare:
        assert uris.scheme(text) == "file"


@pytest.mark.req("REQ-URI-002")
@given(parts=st.lists(st.sampled_from(["", ".", "..", "home", "me", "p", "tmp"]), max_size=6))
def test_whatever_the_spelling_a_session_folder_is_never_root_or_above_home(parts: list[str]) -> None:
    given_folder = "/" + "/".join(parts)
    try:
        folder = check_session_folder(given_folder, [HOME])
    except UriError:
        return
    assert folder == os.path.normpath(folder) and folder != "/" and not folder.startswith("//")
    assert not (HOME + "/").startswith(folder.rstrip("/") + "/")


@pytest.mark.req("REQ-URI-002")
def test_a_uid_the_account_database_does_not_know_leaves_home_alone(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's uid often has no passwd entry: the home folders are then $HOME's alone, never an error."""
    def unknown(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(uris.pwd, "getpwuid", unknown)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert uris.home_folders() == [str(tmp_path), os.path.realpath(tmp_path)]
    with pytest.raises(UriError) as refused:
        uris.session_folder(str(tmp_path))
    assert refused.value.reason == "home"
