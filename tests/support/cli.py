"""Run the `atlas` command in a fresh interpreter against a test database, and check that it
never imported Prefect (commands that run no flow must not pay its start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_cli_without_prefect(database_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    code = ("import sys; from forum_atlas.cli.main import main; rc = main(sys.argv[1:]); "
            "assert 'prefect' not in sys.modules, 'the command imported prefect'; sys.exit(rc)")
    env = {"PATH": "/usr/bin:/bin", "ATLAS_DATABASE_URL": database_url, "ATLAS_DATA_DIR": str(tmp_path),
           "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=120)
