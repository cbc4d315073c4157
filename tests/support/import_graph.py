"""The project's import graph, drawn from the source as text (nothing is imported or run), and the two rules
tests/test_layout.py holds it to: no circle between packages or between modules, and no import up the layers.

    python -m tests.support.import_graph            # packages: each with the packages it imports, then the verdict
    python -m tests.support.import_graph --modules  # the same, module by module
    python -m tests.support.import_graph --dot > imports.dot && dot -Tsvg imports.dot > imports.svg   # a drawing

A package is a top folder (cli, flows, tasks, store, runtime, blocks) or, in the domain (atlas/, installed as
`forum_atlas`), a subpackage such as forum_atlas.deliberation or a top-level module such as forum_atlas.config.
Folders are named by pyproject.toml's package-dir map, so the checkout is read as it stands.
"""

from __future__ import annotations

import argparse
import ast
import tomllib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The layers, higher to lower: an import goes to its own layer or a lower one. `atlas` is the domain (plain logic).
LAYERS = ("cli", "flows", "tasks", "store", "runtime", "blocks", "atlas")
PACKAGE_DIR = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
FOLDER_PACKAGE = {folder: package for package, folder in PACKAGE_DIR.items() if folder in LAYERS}


def layer_files(root: Path) -> list[Path]:
    return [path for folder in LAYERS for path in sorted((root / folder).rglob("*.py"))]


def module_name(root: Path, path: Path) -> str:
    folder, *rest = path.relative_to(root).with_suffix("").parts
    if rest and rest[-1] == "__init__":
        rest = rest[:-1]
    return ".".join([FOLDER_PACKAGE[folder], *rest])


def project_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every absolute forum_atlas import in the file, those inside functions included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names if alias.name.split(".")[0] == "forum_atlas"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "forum_atlas":
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "atlas"


def package(module: str) -> str:
    """A top folder (cli, flows, tasks, store, runtime, blocks), or in the domain a subpackage
    (forum_atlas.deliberation) or a top-level module (forum_atlas.config)."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return ".".join(parts[:2])


def import_graph(root: Path, group: Callable[[str], str] = lambda module: module) -> dict[str, set[str]]:
    """group(module) -> the groups it imports (modules by default; `package` for packages). `from
    forum_atlas.runtime import pgserver` imports the module pgserver."""
    files = layer_files(root)
    known = {module_name(root, path) for path in files}
    edges: dict[str, set[str]] = {}
    for path in files:
        source = group(module_name(root, path))
        for module, names in project_imports(path):
            for target in [f"{module}.{n}" if f"{module}.{n}" in known else module for n in names] or [module]:
                if group(target) != source:
                    edges.setdefault(source, set()).add(group(target))
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One path per circle a depth-first walk meets, e.g. [a, b, a]."""
    found: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def imports_up_the_layers(root: Path) -> list[str]:
    offenders = []
    for path in layer_files(root):
        source = layer(module_name(root, path))
        for module, _ in project_imports(path):
            if LAYERS.index(layer(module)) < LAYERS.index(source):
                offenders.append(f"{path.relative_to(root)} ({source}) -> {module} ({layer(module)})")
    return offenders


def _dot(edges: dict[str, set[str]]) -> str:
    """One box per layer, its packages (or modules) inside, an arrow per import."""
    nodes = sorted(set(edges) | {target for targets in edges.values() for target in targets})
    lines = ["digraph imports {", "  rankdir=TB; node [shape=box, fontsize=10];"]
    for name in LAYERS:
        members = [node for node in nodes if layer(node if node.startswith("forum_atlas") else f"forum_atlas.{node}")
                   == name]
        lines += [f'  subgraph "cluster_{name}" {{ label="{name}";', *(f'    "{node}";' for node in members), "  }"]
    lines += [f'  "{source}" -> "{target}";' for source in sorted(edges) for target in sorted(edges[source])]
    return "\n".join([*lines, "}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", action="store_true", help="module by module (default: package by package)")
    parser.add_argument("--dot", action="store_true", help="Graphviz DOT instead of text")
    args = parser.parse_args()
    group = (lambda module: module) if args.modules else package
    edges = import_graph(REPO, group)
    if args.dot:
        print(_dot(edges))
        return
    for source in sorted(edges):
        print(f"{source} -> {', '.join(sorted(edges[source]))}")
    found, upward = circles(edges), imports_up_the_layers(REPO)
    nodes = set(edges) | {target for targets in edges.values() for target in targets}
    print(f"\n{len(nodes)} {'modules' if args.modules else 'packages'}, {sum(map(len, edges.values()))} arrows; "
          f"{len(found)} circles; {len(upward)} imports up the layers ({' > '.join(LAYERS)})")
    for item in [" -> ".join(circle) for circle in found] + upward:
        print("  ", item)


if __name__ == "__main__":
    main()
