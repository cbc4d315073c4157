"""The text-cleaning rules, each a pure function (issue 23, item 3)."""

from forum_atlas.ingestion.documents.cleaning import (
    PDFIUM_LINE_HYPHEN,
    PageLine,
    drop_invisible,
    expand_ligatures,
    join_line_break_hyphens,
    join_pages,
    keeps_hyphen,
    order_columns,
    remove_running_lines,
    vocabulary,
)


def test_ligatures_are_expanded():
    assert expand_ligatures("e\ufb03cient \ufb01eld \ufb02ow o\ufb00er ba\ufb04e \ufb06op") == "efficient field flow offer baffle stop"


def test_invisible_and_control_characters_go_and_unicode_spaces_become_spaces():
    assert drop_invisible("co\u00adoperate\x00 in\u200b\r\nlab\x07\tA\u00a0B\u2009C\rD") == "cooperate in\nlab\tA B C\nD"


def test_line_break_hyphens_join_words_but_keep_hyphens_that_belong_to_them():
    text = f"it is recom-\nmended; the T-\ncell count; EF{PDFIUM_LINE_HYPHEN}1A binds; GCK{PDFIUM_LINE_HYPHEN}MODY; " \
           f"mole{PDFIUM_LINE_HYPHEN}cular"
    assert join_line_break_hyphens(text) == "it is recommended; the T-cell count; EF-1A binds; GCK-MODY; molecular"


def test_the_documents_own_spelling_decides_a_split_compound():
    words = vocabulary("a well-known result, and a nonzero value")
    assert keeps_hyphen("well", "known", words) and not keeps_hyphen("non", "zero", words)
    assert join_line_break_hyphens("the well-\nknown and non-\nzero", words) == "the well-known and nonzero"
    # a hyphen not followed by a word (the text's end) stays as printed
    assert join_line_break_hyphens(f"x{PDFIUM_LINE_HYPHEN}") == "x-"


def test_running_heads_footers_and_page_numbers_are_removed_but_repeated_content_stays():
    bodies = [[f"{word} {part}" for part in ("opens", "argues", "shows", "ends")] for word in ("alpha", "beta", "gamma", "delta")]
    pages = [[f"Shi et al. BMC Biology (2024) 22:119 Page {n} of 4", *body, f"Journal | (2024) 15:515 {n}", str(n)]
             for n, body in enumerate(bodies, start=1)]
    assert remove_running_lines(pages) == bodies
    same_text_on_every_page = [["habibi"], ["habibi"], ["habibi"]]
    assert remove_running_lines(same_text_on_every_page) == same_text_on_every_page
    # a line in the middle of a page is never a running head, however often it repeats
    middle = [["head", "a", "b", "c", "Results", "d", "e", "f"] for _ in range(3)]
    assert all("Results" in lines for lines in remove_running_lines(middle))


def test_two_columns_extracted_line_across_line_are_read_column_by_column():
    width = 600.0
    title = PageLine("A Title Across The Page", 100, 500)
    left = [PageLine(f"L{i}", 50, 290) for i in range(5)]
    right = [PageLine(f"R{i}", 310, 550) for i in range(5)]
    interleaved = [title] + [line for pair in zip(left, right) for line in pair]
    assert [line.text for line in order_columns(interleaved, width)] == ["A Title Across The Page"] + \
        [f"L{i}" for i in range(5)] + [f"R{i}" for i in range(5)]
    # already in column order: unchanged; one column: unchanged
    assert order_columns([title, *left, *right], width) == [title, *left, *right]
    single = [PageLine(f"S{i}", 50, 550) for i in range(8)]
    assert order_columns(single, width) == single


def test_pages_join_with_offsets_and_a_word_split_across_the_page_break_is_joined():
    words = vocabulary("")
    text, starts = join_pages([f"Due to the popula{PDFIUM_LINE_HYPHEN}", "tion prevalence.", "Next page."], words)
    assert text == "Due to the population prevalence.\nNext page."
    assert starts == [0, len("Due to the popula"), text.index("Next")]
    text, starts = join_pages(["the T-", "cell count"], words)
    assert text == "the T-cell count" and starts == [0, 6]
