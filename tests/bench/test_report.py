"""bench/report.py: the one table every benchmark prints."""

from bench.report import markdown_table, table


def test_numbers_align_right_text_left_and_a_rule_follows_the_headers():
    lines = table(["stage", "p50 ms", "note"], [("BM25 top-20", "3.1", "kernel"), ("hybrid", "12.50", "")]).splitlines()
    assert lines == ["stage        p50 ms  note",
                     "-----------  ------  ------",
                     "BM25 top-20     3.1  kernel",
                     "hybrid        12.50"]


def test_units_and_thousands_separators_count_as_numbers():
    lines = table(["run", "chunks", "x floor"], [("a", "1,200", "1.5×"), ("b", "30", "12%")]).splitlines()
    assert lines[2:] == ["a     1,200     1.5×", "b        30      12%"]


def test_markdown_escapes_pipes_and_shows_none_as_empty():
    assert markdown_table(["a", "b"], [(None, "x|y")]).splitlines()[2] == "|  | x\\|y |"
