"""The wheel is what users install: it must carry every file the package reads at run time (the
migrations and their checksum list, the kernel's sources, the bundled data) under the one name
`forum_atlas`, and work from its own files, never from this checkout."""

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")


def _copy_source(target: Path) -> None:
    """The working tree as a commit of it would hold it: tracked and new (untracked, not ignored)
    files, without the virtualenv, git metadata or build artifacts."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=False, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist, say): copy minus artifacts
        shutil.copytree(REPO, target, ignore=ARTIFACTS)
        return
    for name in filter(None, listed.stdout.split("\0")):
        source = REPO / name
        if source.is_file() and not name.startswith(".venv/"):  # a tracked file deleted here is skipped
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("packaging")
    _copy_source(root / "src")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "--disable-pip-version-check", "-q", "-w", str(root / "out"), str(root / "src")],
                          cwd=root, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = (root / "out").glob("forum_atlas-*.whl")
    return built


def test_the_wheel_carries_every_runtime_file_under_one_name(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = sorted(p.name for p in (REPO / "sql" / "migrations").glob("[0-9][0-9][0-9]_*.sql"))
    function_files = sorted(p.name for p in (REPO / "sql" / "functions").glob("*.sql"))
    assert migrations and function_files
    expected = {
        *(f"forum_atlas/sql/migrations/{name}" for name in migrations),
        "forum_atlas/sql/migrations/MIGRATIONS.sha256",
        *(f"forum_atlas/sql/functions/{name}" for name in function_files),
        "forum_atlas/sql/functions/ORDER",
        *(f"forum_atlas/sql/native/{p.name}" for p in (REPO / "sql" / "native").iterdir() if p.is_file()),
        "forum_atlas/data/forecast_lane.json",
        "forum_atlas/data/sample/scifact_sample.jsonl",
        *(f"forum_atlas/data/series/{p.name}" for p in (REPO / "data" / "series").glob("*.csv")),
    }
    assert sorted(expected - names) == []
    assert any(n.startswith("forum_atlas/sql/native/") for n in names)
    assert any(n.startswith("forum_atlas/data/series/") and n.endswith(".csv") for n in names)
    tops = {name.split("/")[0] for name in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert len(dist_info) == 1 and dist_info.pop().startswith("forum_atlas-")
    assert {t for t in tops if not t.endswith(".dist-info")} == {"forum_atlas"}, tops


# Runs under `python -I -S`: no cwd, no user site, no site-packages processing, so the editable
# install's finder (activated by a .pth file) is not there; sys.path is built by hand.
PROBE = """
import json, sys
unpacked, site_packages = sys.argv[1], sys.argv[2]
sys.path[:0] = [unpacked, site_packages]
import forum_atlas
from forum_atlas.resources import data_file, sql_folder
from forum_atlas.store import migrations
result = {
    "package": forum_atlas.__file__,
    "sql_folder": str(sql_folder()),
    "migrations": [m.filename for m in migrations.discover()],
    "function_files": [f.filename for f in migrations.discover_functions()],
    "sample": str(data_file("sample", "scifact_sample.jsonl")),
    "editable_finders": [repr(f) for f in sys.meta_path if "editable" in repr(f).lower()],
    "other_names": {},
}
for name in ("atlas", "store", "tasks", "cli", "flows", "blocks"):
    try:
        __import__(name)
        result["other_names"][name] = "imported"
    except ModuleNotFoundError:
        result["other_names"][name] = "ModuleNotFoundError"
print(json.dumps(result))
"""


def test_the_unpacked_wheel_works_from_its_own_files(wheel, tmp_path):
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    site_packages = sysconfig.get_paths()["purelib"]
    done = subprocess.run([sys.executable, "-I", "-S", "-c", PROBE, str(unpacked), site_packages],
                          cwd=tmp_path, check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["editable_finders"] == []
    assert Path(result["package"]).is_relative_to(unpacked)
    assert Path(result["sql_folder"]).is_relative_to(unpacked)
    assert result["migrations"] == sorted(p.name for p in (REPO / "sql" / "migrations").glob("[0-9][0-9][0-9]_*.sql"))
    assert sorted(result["function_files"]) == sorted(p.name for p in (REPO / "sql" / "functions").glob("*.sql"))
    assert Path(result["sample"]).is_relative_to(unpacked) and Path(result["sample"]).is_file()
    assert result["other_names"] == dict.fromkeys(("atlas", "store", "tasks", "cli", "flows", "blocks"),
                                                  "ModuleNotFoundError")
