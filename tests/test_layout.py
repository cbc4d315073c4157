"""The house rules that code can check: plain logic stays plain, and the top level is complete."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_CORE = {"prefect", "psycopg", "psycopg_pool", "pgvector"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_logic_imports_neither_prefect_nor_a_database_driver():
    offenders = {
        str(path.relative_to(REPO)): sorted(_imports(path) & FORBIDDEN_IN_CORE)
        for path in (REPO / "atlas").rglob("*.py")
        if _imports(path) & FORBIDDEN_IN_CORE
    }
    assert offenders == {}


def test_only_the_store_package_talks_to_postgresql():
    offenders = [
        str(path.relative_to(REPO))
        for folder in ("atlas", "flows", "tasks", "blocks", "cli")
        for path in (REPO / folder).rglob("*.py")
        if _imports(path) & {"psycopg", "psycopg_pool"}
    ]
    assert offenders == []


def test_top_level_layout():
    for name in ("pyproject.toml", "README.md", "prefect.yaml", "flows", "tasks", "blocks", "sql", "deployments", "tests"):
        assert (REPO / name).exists(), name
