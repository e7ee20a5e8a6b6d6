"""Fail when the imports of host/ and modules/ form a cycle between files (issue #22).

import-linter checks which arrows may exist; this checks that no arrows run in a circle, which a layered
contract cannot express for every package. Imports under `if TYPE_CHECKING:` count too: a type-only cycle still ties two files together.

    python tools/import_cycles.py          # exit 1 and one line per cycle, or "import cycles: none"
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def main() -> int:
    sys.path.insert(0, str(REPO))  # this checkout, whatever is installed
    graph = grimp.build_graph("host", "modules", exclude_type_checking_imports=False)
    found = cycles(graph)
    for component in found:
        print(f"import cycle: {' <-> '.join(component)}", file=sys.stderr)
    if found:
        print(
            f"import cycles: {len(found)}; break each with a pure module both sides import", file=sys.stderr
        )
        return 1
    print("import cycles: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
