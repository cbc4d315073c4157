"""Real documents in (issue 23): extraction speed against the raw extractor, end-to-end ingest, memory, and
retrieval on real papers.

    python -m bench.documents                      # everything (~4–6 min on 2 busy cores)
    python -m bench.documents --compare            # + pypdf and pdfplumber on the same files (the reader choice)
    python -m bench.documents --folder-copies 50 --long-pages 0   # quicker memory rows
    python -m bench.documents --hostile-only       # a folder with DOCX bombs and hostile HTML (issue 39), ~1–2 min

Files: the four CC BY 4.0 papers and the 117-page thesis of ../shared/data/documents.

1. Extraction, in this process: the floor is the raw extractor, pypdfium2's `get_text_range` page by page
   (nothing else); beside it `forum_atlas.ingestion.documents.read_document` (reading order, cleaning, page map,
   outline, metadata); medians of --repeats runs, pages/s and the ratio to the floor. --compare adds pypdf
   and pdfplumber (plain `extract_text` per page) with the quality points of item 3: ligatures and line-end
   hyphens left, running heads left, and how many of the 31 key sentences of
   tests/fixtures/documents/paper_questions.json are found in each library's text (whitespace collapsed).
2. End to end, each in a fresh subprocess with its own embedded PostgreSQL (peak RSS is its own): the ingest
   flow on the five files with the hashed embedder and with the default ONNX model (pages/s, chunks/s);
   memory rows with the hashed embedder: a folder of --folder-copies copies of the four papers, one PDF of
   --long-pages pages (the thesis's pages repeated, made with pypdfium2), and two references of today's
   ingest (JSONL): the bundled 200 SciFact abstracts, and each memory row's own text as JSONL rows (one per
   file, as the reader stored it), so the same content goes through today's path.
3. Retrieval, in the ONNX subprocess after its ingest: for each question, hit@k of the right paper (first k
   distinct documents) and of a passage holding the key sentence (first k passages), for the hybrid pipeline
   (BM25 + dense → RRF, no reranker); the reference in the same run is BM25 (rank_bm25 BM25Okapi, lower-cased
   \\w+ tokens) over fixed 1,000-character windows of the raw extractor text of the same five files. A window
   is judged on its text normalised as the fixture's README says (so the reference loses nothing to
   judging); it is indexed raw.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = REPO.parent / "shared" / "data" / "documents"
PAPERS = sorted((DOCUMENTS / "papers").glob("*.pdf"))
THESIS = DOCUMENTS / "pdf-samples" / "GeoTopo-komprimiert.pdf"
QUESTIONS = REPO / "tests" / "fixtures" / "documents" / "paper_questions.json"
SAMPLE = REPO / "data" / "sample" / "scifact_sample.jsonl"
WINDOW = 1000
SOURCE = {"name": "Bench library", "importance": 3, "quality_score": 3, "licence": "CC-BY-4.0"}


def flat(text: str) -> str:
    return " ".join(text.split())


def raw_pages(path: Path) -> list[str]:
    """The floor: PDFium's text of each page, nothing else."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        pages = []
        for page in document:
            textpage = page.get_textpage()
            pages.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return pages
    finally:
        document.close()


def judged(raw: str) -> str:
    """Raw extractor text normalised for judging (tests/fixtures/documents/README.md): ligatures expanded, soft
    hyphens and NULs dropped, PDFium's line-end hyphen and "-\\n" between lower-case letters joined."""
    from forum_atlas.ingestion.documents.cleaning import expand_ligatures

    text = expand_ligatures(raw).replace("\u00ad", "").replace("\x00", "").replace("\ufffe", "-\n")
    return flat(re.sub(r"(?<=[a-z])-\r?\n(?=[a-z])", "", text))


def _median_seconds(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def extraction_table(files: list[Path], repeats: int, compare: bool) -> None:
    from forum_atlas.ingestion.documents import read_document

    questions = json.loads(QUESTIONS.read_text())
    extractors = {"pypdfium2 raw (floor)": lambda p: raw_pages(p),
                  "forum_atlas reader": lambda p: [read_document(p).text]}
    if compare:
        extractors.update(_other_libraries())
    print("\n## Extraction (pages/s, median of", repeats, "runs; ratio = reader / floor)\n")
    header = "| extractor | " + " | ".join(f.name[:24] for f in files) + " | all pages/s | × floor |"
    print(header + (" ligatures | line-end hyphens | running heads | key sentences |" if compare else ""))
    print("|" + "---|" * (header.count("|") - 1 + (4 if compare else 0)))
    pages = {f: len(raw_pages(f)) for f in files}
    floor_rate = None
    for name, extract in extractors.items():
        seconds = {f: _median_seconds(lambda f=f: extract(f), repeats) for f in files}
        rate = sum(pages.values()) / sum(seconds.values())
        floor_rate = floor_rate or rate
        cells = " | ".join(f"{pages[f] / seconds[f]:.0f}" for f in files)
        row = f"| {name} | {cells} | **{rate:.0f}** | {rate / floor_rate:.2f} |"
        if compare:
            texts = {f.name: "\n".join(extract(f)) for f in files}
            row += " " + " | ".join(str(v) for v in _quality(texts, questions)) + " |"
        print(row, flush=True)


def _other_libraries() -> dict:
    found = {}
    try:
        import pypdf

        found[f"pypdf {pypdf.__version__}"] = lambda p: [page.extract_text() for page in pypdf.PdfReader(str(p)).pages]
    except ImportError:
        print("(pypdf not installed: pip install pypdf)")
    try:
        import pdfplumber

        def plumb(path: Path) -> list[str]:
            with pdfplumber.open(str(path)) as pdf:
                return [page.extract_text() or "" for page in pdf.pages]

        found[f"pdfplumber {pdfplumber.__version__}"] = plumb
    except ImportError:
        print("(pdfplumber not installed: pip install pdfplumber)")
    return found


def _quality(texts: dict[str, str], questions: list[dict]) -> tuple[int, int, int, str]:
    """Ligatures left, line-end hyphens between lower-case letters left, running heads left, key sentences found."""
    everything = "\n".join(texts.values())
    ligatures = len(re.findall(r"[\ufb00-\ufb06]", everything))
    hyphens = len(re.findall(r"[a-z](?:\ufffe|-\r?\n)[a-z]", everything))
    heads = len(re.findall(r"Nature Communications \| \(2024\)|et al\. (?:BMC|Genome) Biology \(20\d\d\) \d+:\d+ Page|"
                           r"Int\. J\. Mol\. Sci\. 2024, 25, 1660 \d+ of", everything))
    found = sum(flat(q["key_sentence"]) in flat(texts.get(q["paper"], "")) for q in questions)
    return ligatures, hyphens, heads, f"{found}/{len(questions)}"


# --- end to end, in subprocesses -------------------------------------------------------------------------------

def _child(corpus: str, data_dir: str, retrieval: bool) -> None:
    """Runs in a subprocess: the ingest flow on `corpus` (a folder of documents or a JSONL file); prints JSON."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from forum_atlas.config import settings_from_env
    from forum_atlas.flows.ingest import SourceParams, ingest
    from forum_atlas.ingestion.validation import warm_up_in_background
    from forum_atlas.store.db import shared_database

    os.environ["ATLAS_DATA_DIR"] = data_dir
    shared_database(settings_from_env())   # the database exists before the run: its seconds are the input's
    warm_up_in_background().join()
    documents = Path(corpus).suffix != ".jsonl"
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        summary = ingest(corpus, batch_size=100 if documents else 1000,
                         source=SourceParams(**SOURCE) if documents else None)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"summary": {k: v for k, v in summary.items() if k != "file_outcomes"}, "peak_rss_mb": peak_mb,
           "outcomes": {f["file"]: f["outcome"] for f in summary.get("file_outcomes") or []}}
    if retrieval:
        out["retrieval"] = _retrieval_measure(Path(corpus))
    print(json.dumps(out))


def _retrieval_measure(folder: Path) -> dict:
    from rank_bm25 import BM25Okapi

    from forum_atlas.config import settings_from_env
    from forum_atlas.retrieval.model import RetrievalOptions
    from forum_atlas.retrieval.pipeline import retrieve
    from forum_atlas.retrieval.retriever import Retriever
    from forum_atlas.store.db import shared_database
    from forum_atlas.store.retrieval import StoredCorpus

    questions = json.loads(QUESTIONS.read_text())
    settings = settings_from_env()
    retriever = Retriever.from_settings(settings, StoredCorpus(shared_database(settings)))
    tokens = lambda text: re.findall(r"\w+", text.lower())  # noqa: E731
    windows, owners = [], []
    for path in sorted(folder.glob("*.pdf")):
        raw = "".join(raw_pages(path))
        for start in range(0, len(raw), WINDOW):
            windows.append(raw[start:start + WINDOW])
            owners.append(path.name)
    reference = BM25Okapi([tokens(w) for w in windows])
    judged_windows = [judged(w) for w in windows]
    hits = {system: {"paper@1": 0, "paper@5": 0, "passage@5": 0, "passage@10": 0} for system in ("hybrid", "reference")}
    for q in questions:
        key = flat(q["key_sentence"])
        passages = retrieve(retriever, q["question"], RetrievalOptions(top_k=10, one_per_document=False)).sources
        papers = [s.chunk.file for s in retrieve(retriever, q["question"], RetrievalOptions(top_k=5)).sources]
        passage_hits = [key in flat(s.chunk.body) for s in passages]
        scores = reference.get_scores(tokens(q["question"]))
        ranked = sorted(range(len(windows)), key=lambda i: -scores[i])
        reference_papers = list(dict.fromkeys(owners[i] for i in ranked))
        reference_hits = [key in judged_windows[i] for i in ranked[:10]]
        for system, ranked_papers, ranked_hits in (("hybrid", papers, passage_hits),
                                                   ("reference", reference_papers, reference_hits)):
            hits[system]["paper@1"] += q["paper"] in ranked_papers[:1]
            hits[system]["paper@5"] += q["paper"] in ranked_papers[:5]
            hits[system]["passage@5"] += any(ranked_hits[:5])
            hits[system]["passage@10"] += any(ranked_hits[:10])
    return {"questions": len(questions), "windows": len(windows),
            "hits": {s: {k: v / len(questions) for k, v in h.items()} for s, h in hits.items()}}


def _run(corpus: Path, embedder: str, retrieval: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="atlas-bench-docs-") as data_dir:
        env = {**os.environ, "PREFECT_HOME": str(Path(data_dir) / "prefect"), "ATLAS_EMBEDDER": embedder}
        out = subprocess.run([sys.executable, "-m", "bench.documents", "--child", str(corpus), data_dir,
                              str(int(retrieval))], cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"ingesting {corpus} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _link_folder(folder: Path, files: list[Path], copies: int = 1) -> Path:
    folder.mkdir(parents=True)
    for copy in range(copies):
        for path in files:
            (folder / (f"{copy:04d}-{path.name}" if copies > 1 else path.name)).symlink_to(path)
    return folder


def _long_pdf(path: Path, pages: int) -> Path:
    """One PDF of at least `pages` pages: the thesis's pages, repeated."""
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(str(THESIS))
    target = pdfium.PdfDocument.new()
    while len(target) < pages:
        target.import_pages(source)
    target.save(str(path))
    return path


def _as_jsonl(folder: Path, path: Path) -> Path:
    """The folder's documents as today's input: one JSONL row per file, its text as the reader stored it."""
    from forum_atlas.ingestion.documents import read_document

    with path.open("w", encoding="utf-8") as out:
        for file in sorted(folder.iterdir()):
            read = read_document(file)
            out.write(json.dumps({"id": file.name, "title": read.title or file.stem, "text": read.text,
                                  "url": file.resolve().as_uri(), "source": SOURCE}) + "\n")
    return path


def _row(label: str, result: dict, floor_pages_per_second: float | None = None) -> str:
    s = result["summary"]
    pages = s.get("pages", 0)
    rate = pages / s["seconds"] if pages else 0
    ratio = f"{rate / floor_pages_per_second:.3f}" if floor_pages_per_second and pages else "-"
    return (f"| {label} | {s.get('files', '-')} | {pages or '-'} | {s['chunks_added']:,} | {s['seconds']:.1f} | "
            f"{rate:.1f} | {ratio} | {s['chunks_added'] / s['seconds']:.1f} | {result['peak_rss_mb']:.0f} |")


def end_to_end(copies: int, long_pages: int) -> None:
    """Each row is printed as soon as its subprocess is done."""
    files = [*PAPERS, THESIS]
    floor = sum(len(raw_pages(f)) for f in files) / _median_seconds(lambda: [raw_pages(f) for f in files], 3)
    print(f"\n## End to end (the ingest flow; floor: raw pypdfium2 on the same five files, {floor:.0f} pages/s in this run)\n")
    print("| input | files | pages | chunks | seconds | pages/s | × floor | chunks/s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="atlas-bench-docs-files-") as tmp:
        tmp = Path(tmp)
        print(_row("four papers + thesis, hashed", _run(_link_folder(tmp / "library", files), "hashed"), floor), flush=True)
        onnx = _run(_link_folder(tmp / "library-onnx", files), "onnx-minilm", retrieval=True)
        print(_row("four papers + thesis, onnx-minilm (default)", onnx, floor), flush=True)
        if copies:
            folder = _link_folder(tmp / "copies", PAPERS, copies)
            print(_row(f"folder: {copies} copies of the four papers, hashed", _run(folder, "hashed"), floor), flush=True)
            print(_row("reference: the same text as JSONL, hashed", _run(_as_jsonl(folder, tmp / "copies.jsonl"),
                                                                          "hashed")), flush=True)
        if long_pages:
            long_folder = tmp / "long"
            long_folder.mkdir()
            print(_row(f"one {long_pages:,}+-page PDF, hashed",
                       _run(_long_pdf(long_folder / "long.pdf", long_pages), "hashed"), floor), flush=True)
            print(_row("reference: the same text as JSONL, hashed", _run(_as_jsonl(long_folder, tmp / "long.jsonl"),
                                                                          "hashed")), flush=True)
        print(_row("reference: today's ingest, 200 SciFact abstracts (JSONL), hashed", _run(SAMPLE, "hashed")), flush=True)
    r = onnx["retrieval"]
    print(f"\n## Retrieval on the four papers (+ thesis): {r['questions']} questions, reference over {r['windows']} "
          f"windows of {WINDOW} characters\n")
    print("| system | paper hit@1 | paper hit@5 | passage hit@5 | passage hit@10 |")
    print("|---|---|---|---|---|")
    for system, label in (("hybrid", "hybrid pipeline (BM25 + ONNX MiniLM → RRF)"),
                          ("reference", "reference: BM25 over raw 1,000-character windows")):
        h = r["hits"][system]
        print(f"| {label} | {h['paper@1']:.2f} | {h['paper@5']:.2f} | {h['passage@5']:.2f} | {h['passage@10']:.2f} |")


def hostile_folder() -> None:
    """Issue 39: the five files beside a 5 MB and a 1.2 GB DOCX bomb, a page nested 100k <div>s deep and a 50 MB
    one-line page; the reference is the five files alone, in the same run."""
    from tests.support.hostile_files import deep_html, docx_bomb, one_line_html

    files = [*PAPERS, THESIS]
    print("\n## Hostile files in a folder (the ingest flow, hashed embedder; reference: the same folder without them)\n")
    print("| input | files | stored | failed (outcome) | seconds | peak RSS MB |")
    print("|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="atlas-bench-hostile-") as tmp:
        tmp = Path(tmp)
        plain = _run(_link_folder(tmp / "plain", files), "hashed")
        folder = _link_folder(tmp / "hostile", files)
        docx_bomb(folder / "bomb-5MB.docx", 5 * 1024 * 1024)
        docx_bomb(folder / "bomb-1.2GB.docx", 1_200_000_000)
        deep_html(folder / "deep-100k.html", 100_000)
        one_line_html(folder / "one-line-50MB.html", 50 * 1024 * 1024)
        hostile = _run(folder, "hashed")
        for label, result in (("reference: four papers + thesis", plain),
                              ("the same + 2 DOCX bombs, a 100k-deep page, a 50 MB one-line page", hostile)):
            s, outcomes = result["summary"], result["outcomes"]
            failed = ", ".join(f"{name}: {outcome}" for name, outcome in sorted(outcomes.items())
                               if outcome not in ("stored", "unchanged")) or "-"
            stored = sum(outcome == "stored" for outcome in outcomes.values())
            print(f"| {label} | {s.get('files', '-')} | {stored} | {failed} | {s['seconds']:.1f} | "
                  f"{result['peak_rss_mb']:.0f} |", flush=True)
        print(f"\npeak RSS with the hostile files / without: {hostile['peak_rss_mb'] / plain['peak_rss_mb']:.2f}; "
              f"seconds: {hostile['summary']['seconds'] / plain['summary']['seconds']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true", help="also pypdf and pdfplumber, with quality counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder-copies", type=int, default=200, help="copies of the four papers in the folder case")
    parser.add_argument("--long-pages", type=int, default=1000, help="pages of the long-PDF case (0: skip)")
    parser.add_argument("--extraction-only", action="store_true")
    parser.add_argument("--hostile-only", action="store_true", help="only the folder with hostile files (issue 39)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.child[2] == "1")
        return
    for key, value in {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                       "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90", "PREFECT_LOGGING_LEVEL": "WARNING"}.items():
        os.environ.setdefault(key, value)
    if args.hostile_only:
        hostile_folder()
        return
    extraction_table([*PAPERS, THESIS], args.repeats, args.compare)
    if not args.extraction_only:
        end_to_end(args.folder_copies, args.long_pages)
        hostile_folder()


if __name__ == "__main__":
    main()
