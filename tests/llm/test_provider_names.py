"""REQ-MODEL-013: the built-in providers' names are one table (``providers.BUILTINS``) that the router's
message for an unconfigured provider, ``doctor`` and the providers file's reserved names read; no other module
lists them."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_args

import pytest

from phoenix_lsp import doctor
from phoenix_lsp.llm import providers
from phoenix_lsp.llm.client import LlmClient
from phoenix_lsp.llm.router import LlmRouter

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "phoenix_lsp"
TABLE = PACKAGE / "llm" / "providers.py"


@pytest.mark.req("REQ-MODEL-013")
def test_the_table_is_the_kinds_and_names_what_configures_each() -> None:
    assert tuple(get_args(providers.Kind)) == tuple(providers.BUILTINS) == providers.BUILTIN_PROVIDERS
    assert all(setting.strip() for setting in providers.BUILTINS.values())


def _name_lists(tree: ast.AST) -> list[tuple[int, set[str]]]:
    """Tuples, lists, sets, dict keys and Literals in ``tree`` that spell two or more built-in provider names."""
    found = []
    for node in ast.walk(tree):
        elts: list[Any] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            elts = list(node.elts)
        elif isinstance(node, ast.Dict):
            elts = list(node.keys)
        names = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in providers.BUILTINS}
        if len(names) >= 2:
            found.append((node.lineno, names))
    return found


@pytest.mark.req("REQ-MODEL-013")
def test_no_module_but_the_table_lists_the_providers() -> None:
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == TABLE:
            continue
        for line, names in _name_lists(ast.parse(path.read_text(encoding="utf-8"))):
            copies.append(f"{path.relative_to(ROOT).as_posix()}:{line}: {sorted(names)}")
    assert not copies, f"read phoenix_lsp/llm/providers.py's BUILTINS instead: {copies}"


@pytest.mark.req("REQ-MODEL-013")
def test_the_scan_finds_a_copy() -> None:
    """The scan above is not blind: the router's old list of names is found."""
    old = 'names = ", ".join(sorted({ANTHROPIC, "openai", "ollama", "azure", *clients}))'
    assert _name_lists(ast.parse(old)) == [(1, {"openai", "ollama", "azure"})]


@pytest.mark.req("REQ-MODEL-013")
def test_an_unconfigured_provider_is_named_with_the_tables_words() -> None:
    router = LlmRouter(LlmClient(api_key="k" * 12), providers.load({}))
    told = router.check("azure/my-gpt-4o") or ""
    assert f"set {providers.BUILTINS['azure']}, then restart the server" in told
    assert "Providers: " + ", ".join(sorted(providers.BUILTINS)) in told
    other = router.check("router/some/model") or ""
    assert "add it to the providers file (PHOENIX_PROVIDERS)" in other


@pytest.mark.req("REQ-MODEL-013")
def test_doctor_names_what_configures_every_other_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "AZURE_OPENAI_ENDPOINT",
                     "PHOENIX_PROVIDERS"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(providers, "OLLAMA_DEFAULT_HOST", "http://127.0.0.1:9")  # nothing answers there

    class Settings:
        providers = None

    [only] = [line for line in doctor.provider_lines(Settings()) if line.startswith("providers: only Anthropic")]
    for name, setting in providers.BUILTINS.items():
        assert (setting in only) == (name != providers.ANTHROPIC), (name, only)
