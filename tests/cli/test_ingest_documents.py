"""`atlas ingest` on a mixed folder of real documents, then search, passage and a brief that cite pages."""

import json
import re
import shutil

import psycopg
import pytest

from forum_atlas.cli.commands.ingest import SOME_FILES_FAILED
from forum_atlas.cli.main import main
from forum_atlas.ingestion.documents.model import page_range

PAPER = "10.1038_s41467-024-44806-1.pdf"
GOOD = {PAPER, "web/article.html", "report.docx"}
FAILED = {"locked.pdf": "encrypted", "scan.pdf": "no_text_layer", "cut.pdf": "corrupt", "zero.pdf": "empty",
          "tool.exe": "unsupported"}
SOURCE = ["--source-name", "Library", "--importance", "4", "--quality", "4", "--licence", "CC-BY-4.0", "--no-progress"]


@pytest.fixture
def atlas_env(database_url, monkeypatch, prefect_env):
    monkeypatch.setenv("ATLAS_DATABASE_URL", database_url)
    monkeypatch.setenv("ATLAS_EMBEDDER", "hashed")
    return database_url


@pytest.fixture
def library(tmp_path, shared_data, fixtures_dir):
    """Good files (a paper, a saved page in a subfolder, a Word report) beside an encrypted PDF, an image-only
    PDF, a truncated PDF, a zero-byte file and an executable."""
    folder = tmp_path / "library"
    (folder / "web").mkdir(parents=True)
    papers, samples = shared_data / "documents" / "papers", shared_data / "documents" / "pdf-samples"
    shutil.copy(papers / PAPER, folder / PAPER)
    shutil.copy(fixtures_dir / "article.html", folder / "web" / "article.html")
    shutil.copy(fixtures_dir / "report.docx", folder / "report.docx")
    shutil.copy(samples / "libreoffice-writer-password.pdf", folder / "locked.pdf")
    shutil.copy(samples / "inline-image.pdf", folder / "scan.pdf")
    (folder / "cut.pdf").write_bytes((papers / "10.3390_ijms25031660.pdf").read_bytes()[:200_000])
    (folder / "zero.pdf").write_bytes(b"")
    (folder / "tool.exe").write_bytes(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00")
    return folder


def _ingest(capsys, folder, *extra):
    rc = main(["ingest", str(folder), *SOURCE, *extra])
    return rc, capsys.readouterr()


def _table(out):
    """file → (outcome, reason) from the ingest report's file table."""
    rows = {}
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip(), maxsplit=2)
        if parts and (parts[0] in GOOD or parts[0] in FAILED):
            rows[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    return rows


def _count(url, query, *args):
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchone()[0]


def test_mixed_folder_stores_the_good_files_reports_the_bad_and_a_rerun_adds_nothing(atlas_env, library, capsys):
    rc, printed = _ingest(capsys, library)
    assert rc == SOME_FILES_FAILED
    table = _table(printed.out)
    assert {f: table[f][0] for f in GOOD} == dict.fromkeys(GOOD, "stored")
    assert {f: table[f][0] for f in FAILED} == FAILED
    assert "OCR is not done" in table["scan.pdf"][1] and "--pdf-password" in table["locked.pdf"][1]
    assert "5 of 8 files failed" in printed.err
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 3

    rc, printed = _ingest(capsys, library)
    assert rc == SOME_FILES_FAILED and re.search(r"documents_added\s+0\n", printed.out)
    assert {f: outcome for f, (outcome, _) in _table(printed.out).items() if f in GOOD} == dict.fromkeys(GOOD, "unchanged")
    assert _count(atlas_env, "SELECT count(*) FROM forum.documents") == 3
    assert _count(atlas_env, "SELECT count(*) FROM forum.events WHERE kind = 'INGEST_BATCH'") == 1

    # The page map in the database gives each chunk the pages Python derives from the same offsets.
    with psycopg.connect(atlas_env) as conn:
        starts, chunks = conn.execute(
            """SELECT d.metadata -> 'page_starts', array_agg(json_build_array(c.start_char, c.end_char,
                      (forum.chunk_pages(d.metadata -> 'page_starts', c.start_char, c.end_char)).first_page,
                      (forum.chunk_pages(d.metadata -> 'page_starts', c.start_char, c.end_char)).last_page))
                 FROM forum.documents d JOIN forum.chunks c USING (document_id)
                WHERE d.external_id = %s GROUP BY d.metadata""", (PAPER,)).fetchone()
    assert len(starts) == 7
    assert all(page_range(starts, start, end) == (first, last) for start, end, first, last in chunks)
    assert {last for *_, last in chunks} == set(range(1, 8))


def test_password_search_passage_and_a_brief_cite_pages(atlas_env, library, capsys):
    rc, printed = _ingest(capsys, library, "--pdf-password", "openpassword")
    assert rc == SOME_FILES_FAILED and _table(printed.out)["locked.pdf"][0] == "stored"

    assert main(["search", "optimal growth temperature of the Asgard ancestor of eukaryotes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    top = result["sources"][0]
    assert top["file"] == PAPER and 1 <= top["first_page"] <= top["last_page"] <= 7 and top["reader"].startswith("pypdfium2")

    assert main(["passage", str(top["chunk_id"])]) == 0
    shown = capsys.readouterr().out
    assert f"file:       {PAPER}" in shown and re.search(r"pages:\s+p\. \d", shown) and "read by:    pypdfium2" in shown

    from forum_atlas.cli.commands.brief import run_ask
    from forum_atlas.deliberation.render import render_html, render_markdown, render_text
    from forum_atlas.store.briefs import load_brief
    from forum_atlas.store.db import Database

    brief_id = run_ask("What was the optimal growth temperature of the Asgard archaea ancestor of eukaryotes?")
    with Database.open() as db:
        view = load_brief(db, brief_id)
        with db.connection() as conn:
            snapshot = conn.execute(
                "SELECT s.canonical FROM forum.briefs b JOIN forum.evidence_snapshots s USING (snapshot_id) "
                "WHERE b.brief_id = %s", (brief_id,)).fetchone()["canonical"]
    cited = [c.citation for s in (view.synthesis, *view.sections) for c in s.claims if c.citation]
    paged = [c for c in cited if c.first_page]
    assert paged, "no claim cites the paper"
    pages = f"p. {paged[0].first_page}" + (f"–{paged[0].last_page}" if paged[0].last_page != paged[0].first_page else "")
    assert f"{paged[0].label} · " in render_text(view) and pages in render_text(view)
    assert pages in render_markdown(view) and pages in render_html(view) and f"file {PAPER}" in render_html(view)
    passages = json.loads(snapshot)["passages"]
    assert any(p["file"] == PAPER and p["first_page"] and p["reader"].startswith("pypdfium2 ") for p in passages.values())


ANSWERS = {  # issue 36: each brief quoted the document's title (or a methods sentence), not the answer
    "How much honey did the apiary produce in 2023?": "148 kilograms",
    "How much rainwater did the Millbrook school tanks collect?": "12,000 litres",
    "What was the optimal growth temperature of the Asgard archaea ancestor of eukaryotes?": "around 53 °C",
}


def test_briefs_quote_the_answer_list_each_passage_once_and_name_a_second_copy(
        atlas_env, tmp_path, shared_data, fixtures_dir, capsys):
    """A Word report, a saved page and a paper, the paper ingested twice (the demo's copy, the user's): each
    brief's [SOURCED] claims quote the figure asked for, its page lists each cited passage once, search shows
    the paper once, and the paper's citation says where else the identical text is."""
    from forum_atlas.cli.commands.brief import run_ask
    from forum_atlas.deliberation.render import render_html, render_text
    from forum_atlas.store.briefs import load_brief
    from forum_atlas.store.db import Database

    mine, demo = tmp_path / "mine", tmp_path / "demo"
    mine.mkdir()
    demo.mkdir()
    for name in ("apiary.docx", "rainwater.html"):
        shutil.copy(fixtures_dir / name, mine / name)
    for folder in (mine, demo):
        shutil.copy(shared_data / "documents" / "papers" / PAPER, folder / PAPER)
    assert main(["ingest", str(demo), *SOURCE[:1], "Demo", *SOURCE[2:]]) == 0
    assert main(["ingest", str(mine), *SOURCE]) == 0
    capsys.readouterr()

    assert main(["search", "optimal growth temperature of the Asgard ancestor of eukaryotes", "--json"]) == 0
    sources = json.loads(capsys.readouterr().out)["sources"]
    (paper,) = [s for s in sources if s["file"] == PAPER]
    assert [c["source_name"] for c in paper["also_in"]] == [{"Demo": "Library", "Library": "Demo"}[paper["source"]]]

    with Database.open() as db:
        for question, answer in ANSWERS.items():
            view = load_brief(db, run_ask(question))
            sourced = [c for s in (view.synthesis, *view.sections) for c in s.claims if c.tag == "SOURCED"]
            assert any(answer in " ".join(c.citation.quote.split()) for c in sourced), (question, [
                c.citation.quote for c in sourced])
            assert all(c.citation.quote.strip() != c.citation.title.strip() for c in sourced)
            page = render_html(view)
            assert page.count('<article class="passage"') == len({c.citation.chunk_id for c in sourced})
            if answer == ANSWERS[next(reversed(ANSWERS))]:
                cited = next(c.citation for c in sourced if answer in " ".join(c.citation.quote.split()))
                assert len(cited.also_in) == 1 and cited.also_in[0].startswith(("Demo", "Library"))
                assert f"also in: {cited.also_in[0]}" in render_text(view) and "also in: " in page


def test_a_folder_goes_in_with_defaults_each_noted_with_its_flag_and_a_stored_source_keeps_its_own(
        atlas_env, fixtures_dir, tmp_path, capsys):
    folder = tmp_path / "my-library"
    folder.mkdir()
    shutil.copy(fixtures_dir / "report.docx", folder / "report.docx")
    assert main(["ingest", str(folder), "--no-progress"]) == 0
    notes = capsys.readouterr().err
    for flag in ("--source-name", "--importance", "--quality", "--licence"):
        assert f"(set it with {flag})" in notes, notes
    assert "source name 'my-library', the folder's name" in notes
    source = "SELECT importance, quality_score, licence FROM forum.sources WHERE name = 'my-library'"
    with psycopg.connect(atlas_env) as conn:
        assert conn.execute(source).fetchone() == (3, 3, "unknown")

    assert main(["sources", "update", "my-library", "--importance", "5", "--reason", "a canonical shelf"]) == 0
    shutil.copy(fixtures_dir / "article.html", folder / "article.html")
    assert main(["ingest", str(folder), "--no-progress", "--licence", "CC-BY-4.0"]) == 1   # it says otherwise
    assert "licence 'CC-BY-4.0' (stored: 'unknown')" in capsys.readouterr().err
    assert main(["ingest", str(folder), "--no-progress"]) == 0   # the defaults do not contradict what is stored
    with psycopg.connect(atlas_env) as conn:
        assert conn.execute(source).fetchone() == (5, 3, "unknown")
        assert conn.execute("SELECT count(*) FROM forum.documents").fetchone()[0] == 2


def test_a_single_file_takes_its_folders_name(atlas_env, fixtures_dir, tmp_path, capsys):
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    shutil.copy(fixtures_dir / "report.docx", shelf / "report.docx")
    assert main(["ingest", str(shelf / "report.docx"), "--no-progress"]) == 0
    assert "source name 'shelf'" in capsys.readouterr().err
    with psycopg.connect(atlas_env) as conn:
        assert conn.execute("SELECT name FROM forum.sources").fetchall() == [("shelf",)]
