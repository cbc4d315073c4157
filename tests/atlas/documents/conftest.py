from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/fixtures/documents: the HTML and DOCX fixtures and the paper questions."""
    return Path(__file__).resolve().parents[2] / "fixtures" / "documents"
