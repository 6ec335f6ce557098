"""A failing test is always reported as a failure, even when pytest cannot draw its traceback (issue 35).

CPython 3.11.7 (the interpreter this project's virtualenv and CI use) keeps the AST constructor's recursion
count in one place per interpreter, so two threads in ``ast.parse`` at the same moment can make one of them
raise ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905, fixed in 3.11.8). pytest
parses a test file with ``ast.parse`` to draw a failure's source lines (``--tb=short``/``long``), and a test
process has other threads that parse too: 3.11's ``traceback`` module parses each line it prints to place its
carets, so any thread that logs an exception does. Under load the two meet; the ``SystemError`` then escapes
``pytest_runtest_makereport``, the failure is lost and, in an xdist worker, the whole run ends in INTERNALERROR.

This plugin (loaded by ``tests/conftest.py``) catches that one error around the report's making and reports
the test's own failure instead, drawn the way ``--tb=line`` draws it (the exception and its place, no source,
so no parse) plus each frame's ``file:line in function``.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

#: The message CPython's ``PyAST_mod2obj`` raises when its count is off; any other SystemError is not ours.
AST_RACE = "AST constructor recursion depth mismatch"


def _report_without_source(item: pytest.Item, call: pytest.CallInfo[None], race: SystemError) -> pytest.TestReport:
    excinfo, when = call.excinfo, call.when
    assert excinfo is not None  # only a failure's report draws a traceback
    assert when != "collect"  # a test's report: its setup, call or teardown
    longrepr = excinfo.getrepr(style="line")  # the exception and where it was raised: no source read, no parse
    # the frames pytest would draw: from the test's own file on (when it is in the traceback), no hidden ones
    traceback = excinfo.traceback.cut(path=item.path) or excinfo.traceback
    frames = "\n".join(f"{entry.path}:{entry.lineno + 1} in {entry.name}" for entry in traceback.filter(excinfo))
    longrepr.addsection(
        "traceback (drawn without source lines)",
        f"{frames}\npytest could not draw this failure's source lines: {race} (a CPython 3.11.7 race between "
        "two threads in ast.parse, fixed in 3.11.8); the failure above is the test's own",
    )
    return pytest.TestReport(
        item.nodeid,
        item.location,
        dict.fromkeys(item.keywords, 1),
        "failed",
        longrepr,
        when,
        [(f"Captured {key} {phase}", content) for phase, key, content in item._report_sections],  # as pytest does
        call.duration,
        call.start,
        call.stop,
        item.user_properties,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    try:
        return (yield)
    except SystemError as error:
        if AST_RACE not in str(error) or call.excinfo is None:
            raise
        return _report_without_source(item, call, error)
