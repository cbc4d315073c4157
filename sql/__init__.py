"""Package data: the numbered migrations (`NNN_name.sql`, applied in order by
`forum_atlas.store.migrations`) and, in `native/`, the BM25 kernel's extension sources.
Read with importlib.resources, so an installed wheel carries them."""
