"""`atlas series load`, `atlas accuracy`, `atlas forecast show` — database commands without Prefect."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from forum_atlas.cli.main import main
codes = [main(argv) for argv in {argvs!r}]
print("CODES", codes, "PREFECT", "prefect" in sys.modules)
"""


def run_cli(argvs, database_url, tmp_path):
    env = {"ATLAS_DATABASE_URL": database_url, "ATLAS_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(argvs=argvs)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.stdout, done.stderr


def test_series_and_accuracy_commands_without_prefect(database_url, tmp_path, shared_data):
    series = shared_data / "series"
    garbage = tmp_path / "UNRATE__fred_vintage_2026-04.csv"
    garbage.write_text("observation_date,UNRATE\n2026-01-01,4.3\n2026-02-01,n/a\n")
    out, err = run_cli([["series", "load", str(series / "UNRATE__fred_vintage_2026-03.csv"), str(garbage)],
                        ["series", "load", str(series / "UNRATE__fred_vintage_2026-03.csv")],
                        ["series", "load", str(series / "UNRATE__fred_vintage_2026-03.csv")],
                        ["series", "list"],
                        ["accuracy", "--out", str(tmp_path / "out")]], database_url, tmp_path)
    assert "CODES [1, 0, 0, 0, 0] PREFECT False" in out, (out, err)
    assert "line 3: 'n/a' is neither a number" in err and "nothing was stored" in err
    loads = [line.split() for line in out.splitlines() if line.startswith("UNRATE")]
    assert loads[0][:4] == ["UNRATE", "2026-03", "1", "new"] and loads[0][4:6] == ["194", "1"]
    assert loads[1][:5] == ["UNRATE", "2026-03", "1", "already", "stored"]
    assert re.search(r"unscoreable\s+0\n", out) and re.search(r"last bound forecast\s+none yet", out)
    assert "no forecast has ever been bound" in out
    assert (tmp_path / "out" / "accuracy.md").exists() and not (tmp_path / "out" / "reliability.png").exists()
