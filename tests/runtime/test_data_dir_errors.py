"""Issue 39, item 4: a data directory the embedded PostgreSQL cannot write to is said in one line, with the fix,
at once (it was 17–18 s, 5 start retries and 156 lines of pg_ctl output whose last line omitted the cause).

Tests run as root, whom chmod does not stop: the directory is made read-only for real, by a read-only bind mount
in a private mount namespace (`unshare -m`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from forum_atlas.runtime.pgserver import DataDirError, _check_writable, embedded_url, stop_embedded
from tests.support.cli import REPO_ROOT

_READ_ONLY = "mount --bind {d} {d} && mount -o remount,bind,ro {d} && exec \"$@\""


def _atlas_on_read_only(data_dir, tmp_path, *args: str) -> subprocess.CompletedProcess:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is needed to make a directory read-only for root")
    env = {"PATH": "/usr/bin:/bin", "ATLAS_DATA_DIR": str(data_dir), "HOME": str(tmp_path),
           "PREFECT_HOME": str(tmp_path / "prefect")}
    command = ["unshare", "-m", "sh", "-c", _READ_ONLY.format(d=data_dir), "sh",
               sys.executable, "-m", "forum_atlas.cli.main", "db", "status"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120)
    if "mount" in done.stderr and "permission denied" in done.stderr.lower():
        pytest.skip(f"no mount namespace here: {done.stderr.strip()}")
    return done


@pytest.mark.parametrize("initialised", [False, True], ids=["new", "existing-cluster"])
def test_a_read_only_data_dir_is_one_line_naming_the_cause_and_the_fix(tmp_path, initialised):
    # Outside pytest's 0700 temp folders: as root the server runs as a system user, who must reach the directory.
    data = Path(tempfile.mkdtemp(prefix="atlas-read-only-"))
    try:
        if initialised:   # a cluster that ran before, then found on a read-only mount
            embedded_url(data / "pgdata")
            stop_embedded(data / "pgdata")
        done = _atlas_on_read_only(data, tmp_path)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()   # no retry warnings, no pg_ctl output
    assert line.startswith("atlas: error: the data directory") and "not writable (Read-only file system)" in line
    assert "set ATLAS_DATA_DIR to a writable directory" in line


def test_a_full_disk_is_said_before_postgres_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 2**20, 2**20))
    with pytest.raises(DataDirError, match=r"nearly full \(1 MiB free"):
        _check_writable(tmp_path / "pgdata")
