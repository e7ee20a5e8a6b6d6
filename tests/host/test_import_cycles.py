"""tools/import_cycles.py finds a cycle between files however long, and none in a layered graph."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import grimp

TOOL = Path(__file__).resolve().parents[2] / "tools" / "import_cycles.py"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graph(*arrows: tuple[str, str]) -> grimp.ImportGraph:
    g = grimp.ImportGraph()
    for importer, imported in arrows:
        g.add_import(importer=importer, imported=imported)
    return g


def test_a_layered_graph_has_no_cycle() -> None:
    tool = load_tool()
    assert tool.cycles(graph(("a.cli", "a.service"), ("a.service", "a.store"), ("a.cli", "a.store"))) == []


def test_cycles_of_two_and_of_three_files_are_each_found_once() -> None:
    tool = load_tool()
    found = tool.cycles(
        graph(
            ("h.ai", "h.module"),
            ("h.module", "h.ai"),
            ("h.runtime", "h.console"),
            ("h.console", "h.overview"),
            ("h.overview", "h.runtime"),
            ("h.cli", "h.runtime"),
        )
    )
    assert found == [["h.ai", "h.module"], ["h.console", "h.overview", "h.runtime"]]
