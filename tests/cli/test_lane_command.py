"""`atlas lane run|status|pause|resume`: one command for the binding lane (issue 40); `atlas forecast lane` is gone.
status/pause/resume against a deployed lane: tests/test_deployments.py."""

from __future__ import annotations

import json

import pytest

from forum_atlas.cli.main import main


@pytest.fixture
def atlas_env(monkeypatch, database_url, tmp_path):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATLAS_LLM", "offline")


def test_lane_run_binds_once_and_a_second_run_finds_it_bound(prefect_env, atlas_env, tmp_path, shared_data, capsys):
    assert main(["series", "load", str(shared_data / "series" / "UNRATE__fred_vintage_2025-04.csv")]) == 0
    questions = tmp_path / "lane.json"
    questions.write_text(json.dumps({"questions": [
        {"key": "lane-unrate", "series_id": "UNRATE", "comparator": ">", "reference": "previous"}]}))
    capsys.readouterr()
    run = ["lane", "run", "--questions", str(questions), "--as-of", "2025-04-15T00:00:00Z"]
    assert main(run) == 0
    first = capsys.readouterr().out
    assert main(run) == 0
    second = capsys.readouterr().out
    assert first.split()[:5] == ["key", "status", "forecast", "probability", "deadline"]
    assert [line.split()[:2] for line in first.splitlines() if line.startswith("lane-unrate")] == \
        [["lane-unrate", "bound"]]
    assert [line.split()[:3] for line in second.splitlines() if line.startswith("lane-unrate")] == \
        [["lane-unrate", "already", "bound"]]


def test_the_lane_is_one_command(capsys):
    with pytest.raises(SystemExit) as refused:
        main(["forecast", "lane"])
    assert refused.value.code == 2 and "invalid choice: 'lane'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["lane"])
    assert refused.value.code == 2
    assert "required: {run,status,resume,pause}" in capsys.readouterr().err
