"""`atlas ingest`'s progress when stderr is not a terminal (a file, a pipe): a line per stage (issue 36)."""

import io

from forum_atlas.cli.progress import LineProgress
from tests.atlas.ingestion.test_progress import Clock


def test_output_that_is_not_a_terminal_gets_a_line_per_stage_and_a_line_on_the_embedding_now_and_then():
    clock, out = Clock(), io.StringIO()
    watcher = LineProgress(out, every=15, clock=clock)
    watcher.stage("checking the input")
    watcher.start(2_000)
    watcher.advance(2_000, 4)
    watcher.chunks_planned(60)
    clock.now += 5
    watcher.chunks_embedded(20)    # within 15 s of the last line: nothing
    clock.now += 15
    watcher.chunks_embedded(20)
    watcher.chunks_embedded(20)    # the last chunk: a line whatever the time
    watcher.stage("building the vector index")
    assert out.getvalue().splitlines() == [
        "ingest: checking the input",
        "ingest: read 100 % (4 files, 0 pages); embedded 40 of 60 chunks, 2.0 chunks/s, 10 s left",
        "ingest: read 100 % (4 files, 0 pages); embedded 60 of 60 chunks, 3.0 chunks/s, 0 s left",
        "ingest: building the vector index",
    ]
