"""`atlas evidence gather "…"` runs the gather-evidence flow (in a fresh interpreter, against the
session's Prefect API) with sources replaying real recorded responses; `atlas evidence show` reads
the stored run without starting Prefect."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.atlas.evidence.replay import recorded
from tests.support.cli import REPO_ROOT, run_cli_without_prefect
from tests.support.wire import WireServer


def run_cli(database_url: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "ATLAS_DATABASE_URL": database_url, "ATLAS_DATA_DIR": str(tmp_path),
           "ATLAS_EMBEDDER": "hashed", "PREFECT_API_URL": PREFECT_API_URL.value()}
    return subprocess.run([sys.executable, "-m", "forum_atlas.cli.main", *args], check=False, capture_output=True,
                          text=True, env=env, cwd=REPO_ROOT, timeout=300)


def test_gather_then_show(database_url, prefect_env, tmp_path):
    with WireServer() as wire:
        wire.always("/drug/label.json", recorded("openfda/error_404_drugsfda_no-matches.json"))
        wire.always("/search", recorded("europepmc/search_no_results.json"))
        wire.always("/studies/NCT00973089", recorded("clinicaltrials/study_NCT00973089_withdrawn.json"))
        done = run_cli(database_url, tmp_path, "evidence", "gather", "aspirin, call 555-867-5309",
                       "--source", "openfda", "--source", "europepmc", "--source", "clinicaltrials",
                       "--filter", "clinicaltrials=nct_id:NCT00973089", "--base-url", f"openfda={wire.url}",
                       "--base-url", f"europepmc={wire.url}", "--base-url", f"clinicaltrials={wire.url}",
                       "--base-url", f"crossref={wire.url}", "--json")
        assert not any("555-867" in r.path for r in wire.requests)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert {o["source"]: o["outcome"] for o in out["outcomes"]} == {
        "openfda": "empty", "europepmc": "empty", "clinicaltrials": "ok(1)"}
    assert out["question"] == "aspirin, call [PHONE]" and out["excluded"] == 1
    shown = run_cli_without_prefect(database_url, tmp_path, "evidence", "show", str(out["run_id"]))
    assert shown.returncode == 0, shown.stderr
    assert "excluded" in shown.stdout and "WITHDRAWN" in shown.stdout and "555-867" not in shown.stdout


def test_a_malformed_assignment_is_refused_before_anything_runs(database_url, tmp_path):
    done = run_cli_without_prefect(database_url, tmp_path, "evidence", "gather", "aspirin", "--timeout", "openfda")
    assert done.returncode == 2 and "expected SOURCE=VALUE" in done.stderr
