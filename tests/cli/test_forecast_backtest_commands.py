"""`atlas forecast backtest` and `atlas series register` / `registry`: no Prefect, reproducible output."""

from __future__ import annotations

import json

from forum_atlas.store import forecasts as repo
from tests.support.cli import run_cli_without_prefect
from tests.support.series import load_series_files


def test_backtest_prints_the_same_numbers_twice_without_prefect(database_url, tmp_path, shared_data):
    unrate = str(shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv")
    args = ("forecast", "backtest", unrate, "--horizon", "1m", "--every", "2", "--json", "--seed", "3")
    first = run_cli_without_prefect(database_url, tmp_path, *args)
    again = run_cli_without_prefect(database_url, tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout
    summary = json.loads(first.stdout)
    assert (summary["series"], summary["frequency"], summary["horizon_periods"]) == ("UNRATE", "monthly", 1)
    assert summary["n"] + summary["unresolvable"] == summary["origins"] and "elapsed" in first.stderr
    out = run_cli_without_prefect(database_url, tmp_path, "forecast", "backtest", unrate, "--horizon", "1q",
                                  "--threshold", "5", "--comparator", "<", "--rule", "v1", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "series-climatology-momentum-v1" in out.stdout and "real-time revisions" in out.stdout
    # issue 27: three references, the last third of the origins and the ECE bin table
    assert all(k in out.stdout for k in ("skill_vs_half", "skill_vs_hindsight_window", "last_third_ece", "ECE bin"))
    assert (tmp_path / "reliability.png").exists() and json.loads((tmp_path / "backtest.json").read_text())["rows"]
    # issue 41: the ECE beside its floor's 90th percentile and the verdict, skill intervals from a block bootstrap
    assert all(k in out.stdout for k in ("ece_if_calibrated_p90", "ece_bound", "calibrated", "skill_vs_half_low",
                                         "skill_vs_base_rate_high", "block bootstrap"))
    v6 = run_cli_without_prefect(database_url, tmp_path, "forecast", "backtest", unrate, "--horizon", "3",
                                 "--every", "4", "--rule", "v6", "--json")
    assert v6.returncode == 0, v6.stderr
    assert json.loads(v6.stdout)["rule"] == "series-stable-base-rate-v6"  # issue 27's candidate, on request
    v7 = run_cli_without_prefect(database_url, tmp_path, "forecast", "backtest", unrate, "--horizon", "3",
                                 "--every", "4", "--rule", "v7", "--json")
    assert v7.returncode == 0, v7.stderr
    summary = json.loads(v7.stdout)
    assert summary["rule"] == "series-earned-departure-v7"
    assert summary["calibrated"] == (summary["ece"] <= max(0.05, summary["ece_if_calibrated_p90"]))
    assert summary["skill_vs_half_low"] <= summary["skill_vs_half"] <= summary["skill_vs_half_high"]


def test_backtest_of_a_stored_series_and_of_an_unknown_id(db, database_url, tmp_path, shared_data):
    load_series_files(db, [shared_data / "series" / "UNRATE__fred_vintage_2026-03.csv"])
    stored = run_cli_without_prefect(database_url, tmp_path, "forecast", "backtest", "UNRATE", "--horizon", "1",
                                     "--json")
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["source"] == "UNRATE vintage 2026-03 (#1)"
    unknown = run_cli_without_prefect(database_url, tmp_path, "forecast", "backtest", "NOPE")
    assert unknown.returncode != 0
    assert "unknown series id 'NOPE': known series are CPIAUCSL, DGS10, FEDFUNDS, UNRATE" in unknown.stderr


def test_register_needs_every_field_lists_the_series_and_the_audit_still_verifies(db, database_url, tmp_path):
    fields = ("--title", "Real Gross Domestic Product", "--frequency", "quarterly",
              "--units", "billions of chained 2017 dollars, SAAR", "--publisher", "U.S. Bureau of Economic Analysis")
    incomplete = run_cli_without_prefect(database_url, tmp_path, "series", "register", "GDPC1", *fields[:6])
    assert incomplete.returncode == 2 and "--publisher" in incomplete.stderr
    blank = run_cli_without_prefect(database_url, tmp_path, "series", "register", "GDPC1", *fields[:-1], " ")
    assert blank.returncode != 0 and "publisher must be given" in blank.stderr
    done = run_cli_without_prefect(database_url, tmp_path, "series", "register", "GDPC1", *fields)
    assert done.returncode == 0, done.stderr
    assert "GDPC1: registered (quarterly)" in done.stdout
    listed = run_cli_without_prefect(database_url, tmp_path, "series", "registry")
    assert [line.split()[0] for line in listed.stdout.splitlines()[2:]] == [
        "CPIAUCSL", "DGS10", "FEDFUNDS", "GDPC1", "UNRATE"]
    verified = run_cli_without_prefect(database_url, tmp_path, "audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
