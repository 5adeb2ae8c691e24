"""Imports run one way: the layers of pyproject.toml's [tool.importlinter] hold, and no module
of numlint reaches itself again through its imports (imports inside functions and under
TYPE_CHECKING count: a lazy import is still a dependency)."""

from __future__ import annotations

from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")
importlinter_cli = pytest.importorskip("importlinter.cli")

ROOT = Path(__file__).resolve().parents[1]


def test_the_layers_and_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """`lint-imports`: each module imports only the layers below its own."""
    code = importlinter_cli.lint_imports(
        config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True
    )
    out = capsys.readouterr().out
    assert code == 0, out


def _cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One import chain per module that reaches itself again (a -> ... -> a)."""
    found: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            chain = (importer, *back)
            if frozenset(chain) not in seen:
                seen.add(frozenset(chain))
                found.append(chain)
    return found


def test_no_module_imports_itself_back() -> None:
    """No circle between any two modules, a package's `__init__` and its own modules
    included (import-linter's acyclic contract looks at sibling packages only)."""
    graph = grimp.build_graph("numlint", cache_dir=None)
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_finds_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The circle check fails on a package whose modules import each other lazily."""
    pkg = tmp_path / "circular"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from circular import high\n")
    (pkg / "high.py").write_text("from circular import low\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circular", cache_dir=None)
    assert _cycles(graph) == [("circular.high", "circular.low", "circular.high")]
