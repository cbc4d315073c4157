"""Where Forum Atlas keeps its data, as a Prefect block (the UI edits it as a form)."""

from __future__ import annotations

from pathlib import Path

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from forum_atlas.config import Settings


class AtlasDatabase(Block):
    _block_type_name = "Forum Atlas Database"
    _description = "A PostgreSQL URL with pgvector >= 0.5, or empty for the embedded server in data_dir."

    url: SecretStr | None = Field(default=None, description="postgresql://… ; empty = embedded PostgreSQL")
    data_dir: str | None = Field(default=None, description="data directory of the embedded server")

    def apply(self, settings: Settings) -> Settings:
        return settings.with_overrides(
            database_url=self.url.get_secret_value() if self.url else None,
            data_dir=Path(self.data_dir) if self.data_dir else None,
        )
