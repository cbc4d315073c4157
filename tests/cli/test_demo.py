"""The README's main job, `atlas demo`, end to end on a fresh database."""

import re

from forum_atlas.cli.main import main
from forum_atlas.runtime import kernel_build


def test_demo_ingests_searches_forecasts_scores_and_reports(database_url, monkeypatch, prefect_env, tmp_path, capsys):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.delenv("ATLAS_EMBEDDER")   # the default a fresh install has: the ONNX model (conftest pins hashed)
    assert main(["demo", "--report-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"documents_added +200\b", out)
    assert re.search(r"embedder +onnx/all-MiniLM-L6-v2-int8/windows256@384\b", out)
    dense = re.search(r"dense candidates at cosine >= 0.45: (\d+); by rank: #1 chunk \d+ \((0\.\d+)\)", out)
    assert dense and int(dense[1]) >= 3 and float(dense[2]) >= 0.45, "the dense stage contributes to the search"
    share = re.search(r"embed_model_share_of_embed +(0\.\d+|1\.0)\b", out)
    assert share and float(share[1]) > 0.5, "the ingest summary reports the model's share of the embedding time"
    engine = "C kernel atlas_bm25_" if kernel_build.find_compiler() else "PL/pgSQL MaxScore"
    assert "postgresql-bm25okapi" in out and f"BM25 engine: {engine}" in out and "\n1  " in out, "search printed ranked sources"
    assert "(unscoreable): p = " in out and "ci_basis: monte_carlo_sampling_95" in out
    assert "| last bound forecast | 2025-04-15" in out and "| resolved | 2 |" in out and "| unresolvable | 1 |" in out
    assert any(p.suffix == ".png" for p in tmp_path.iterdir()), "reliability diagram written"
    paper = out[out.index("6. a real PDF"):]
    assert "1 file stored (7 pages" in paper
    assert re.search(r"\[S\d+ · Evolution of optimal growth temperature.* · p\. \d+(–\d+)? · Nature Communications", paper), \
        "the brief cites the paper with its page"
    assert "with an optimal growth temperature around 53 °C" in " ".join(paper.split()), \
        "the paper's brief quotes the temperature asked for (issue 36), not a methods sentence"
    stored = out[out.index("7. what is stored"):]
    assert re.search(r"\ndocuments +201\n", stored) and re.search(r"\nsources +2\n", stored), \
        "the table counts what the last step stored"
    assert main(["demo", "--report-dir", str(tmp_path)]) == 0, "the demo can be run again"
    again = capsys.readouterr().out
    assert re.search(r"documents_added +0\b", again) and "| forecasts | 5 |" in again
