"""The layers of a Python package tree, read from its imports: no circles, anywhere.

Every ``import`` and ``from … import`` counts, at any depth of the module (a lazy
import inside a function and a type-only import under ``TYPE_CHECKING`` are imports
too). Two views are checked:

* modules: no set of modules imports each other in a circle;
* rooms: inside each package, its direct children (modules and subpackages, a
  subpackage standing for everything under it) form no circle either, so every
  package reads as floors, each above what it imports.

``python -m softswitch.devtools.layers [DIR]`` (default: the softswitch package)
prints each circle with the imports that make it and exits 1, or prints the floors of
the top package and exits 0. ``tests/unit/test_layers.py`` runs it in ``make test``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

Edge = tuple[str, str]


@dataclass
class Graph:
    """Modules by dotted name, and which modules each imports (within the tree)."""

    files: dict[str, Path] = field(default_factory=dict)
    imports: dict[str, set[str]] = field(default_factory=dict)

    def resolve(self, name: str) -> str | None:
        """The tree's module that ``name`` (a module or a name in one) refers to."""
        while name and name not in self.files:
            name = name.rpartition(".")[0]
        return name or None


def read_tree(top: Path) -> Graph:
    """The import graph of the package at ``top`` (its folder)."""
    graph = Graph()
    for path in sorted(top.rglob("*.py")):
        parts = path.relative_to(top.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph.files[name] = path
    for name, path in graph.files.items():
        tree = ast.parse(path.read_text(), str(path))
        graph.imports[name] = {target for target in map(graph.resolve, _imported(tree))
                               if target is not None and target != name}
    return graph


def _imported(tree: ast.AST) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def circles(nodes: Iterable[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def room_edges(graph: Graph, package: str) -> dict[str, dict[str, list[Edge]]]:
    """Inside ``package``: which direct child imports which, and through which modules."""
    def room(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return package + "." + module[len(package) + 1:].split(".")[0]

    rooms: dict[str, dict[str, list[Edge]]] = {}
    for module, targets in graph.imports.items():
        source = room(module)
        if source is None:
            continue
        rooms.setdefault(source, {})
        for target in targets:
            other = room(target)
            if other is not None and other != source:
                rooms[source].setdefault(other, []).append((module, target))
    return rooms


def problems(graph: Graph) -> list[str]:
    """Every circle among modules, and among the rooms of every package."""
    found = [f"modules import each other in a circle: {' -> '.join(c)}"
             for c in circles(graph.files, graph.imports)]
    packages = sorted(name for name, path in graph.files.items() if path.name == "__init__.py")
    for package in packages:
        rooms = room_edges(graph, package)
        edges = {source: set(targets) for source, targets in rooms.items()}
        for circle in circles(rooms, edges):
            ties = [f"{a} -> {b}" for source in circle for target, pairs in rooms[source].items()
                    if target in circle for a, b in sorted(pairs)[:2]]
            found.append(f"inside {package}: {', '.join(circle)} import each other "
                         f"({'; '.join(ties)})")
    return found


def floors(graph: Graph, package: str) -> list[list[str]]:
    """The rooms of ``package`` by floor, the ground first (its graph has no circle)."""
    rooms = room_edges(graph, package)
    level: dict[str, int] = {}

    def floor_of(room: str) -> int:
        if room not in level:
            level[room] = 0
            level[room] = 1 + max((floor_of(t) for t in rooms.get(room, {})), default=0)
        return level[room]

    for room in rooms:
        floor_of(room)
    by_floor: dict[int, list[str]] = {}
    for room, n in level.items():
        by_floor.setdefault(n, []).append(room.rpartition(".")[2])
    return [sorted(by_floor[n]) for n in sorted(by_floor)]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    top = Path(args[0]) if args else Path(__file__).resolve().parents[1]
    if not (top / "__init__.py").is_file():
        print(f"{top}: not a Python package (no __init__.py)", file=sys.stderr)
        return 2
    graph = read_tree(top)
    found = problems(graph)
    for line in found:
        print(line)
    if found:
        return 1
    print(f"{len(graph.files)} modules, no circle; the floors of {top.name}, ground first:")
    for n, rooms in enumerate(floors(graph, top.name), 1):
        print(f"  {n}: {' '.join(rooms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
