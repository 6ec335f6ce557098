"""Project-wide fixtures and the requirement-traceability collection hook."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import Phase, settings

from tests.drawn_failures import pytest_runtest_makereport
from tests.fake_anthropic import fake_anthropic
from tests.fake_openai import fake_openai
from tests.longest_first import LongestFirst

__all__ = ["fake_anthropic", "fake_openai", "pytest_runtest_makereport"]

# The suite keeps its bytecode caches even where the environment says to write none (PYTHONDONTWRITEBYTECODE, set
# in some container images): without them each xdist worker of each run rewrites the asserts of every test module
# again (collection 15 s of CPU a worker, 6 s with the caches), and each fresh server interpreter compiles the
# package's modules again. Only this process writes them (into the __pycache__ folders git ignores); the servers it
# starts keep the environment's word and read them.
sys.dont_write_bytecode = False

#: The state machine's property test runs this many examples in the fast tier (``-m "not slow"``), a tenth of
#: the full suite's; ``PHOENIX_PROPERTY_EXAMPLES`` still decides when set.
FAST_TIER_EXAMPLES = "100"
#: ... and this many under mutation testing (mutmut sets MUTANT_UNDER_TEST): it runs once per mutant, and the
#: table tests are what must kill the mutants; the property test only adds to them.
MUTATION_EXAMPLES = "10"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the longest tests start first (tests/longest_first.py)
        config.pluginmanager.register(LongestFirst(), "phoenix-longest-first")
    if "MUTANT_UNDER_TEST" in os.environ:
        os.environ.setdefault("PHOENIX_PROPERTY_EXAMPLES", MUTATION_EXAMPLES)
        # a failing example is not shrunk (shrinking can outlast mutmut's time limit, and a killed mutant
        # needs no minimal example), and none is saved for the next mutant: each verdict stands alone
        settings.register_profile("mutation", phases=(Phase.explicit, Phase.generate), database=None)
        settings.load_profile("mutation")
    elif (config.option.markexpr or "").replace(" ", "") == "notslow":
        os.environ.setdefault("PHOENIX_PROPERTY_EXAMPLES", FAST_TIER_EXAMPLES)


#: requirement id -> test node ids naming it, filled while collecting
REQ_INDEX: dict[str, list[str]] = {}


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "MUTANT_UNDER_TEST" in os.environ:
            # mutmut 3.8 records which test covers which function by ``item._nodeid``, which pytest 9 no longer
            # has (it is ``nodeid``); nodes keep a __dict__, so the old name can be given back.
            item._nodeid = item.nodeid  # type: ignore[attr-defined]
        for marker in item.iter_markers("req"):
            for req in marker.args:
                REQ_INDEX.setdefault(str(req), []).append(item.nodeid)
