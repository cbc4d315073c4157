"""Package data: the schema. `migrations/` holds the numbered migrations (`NNN_name.sql`, applied in
order by `forum_atlas.store.migrations`, immutable once applied), `functions/` the one current
definition of every SQL function (re-applied when it changes, in the order `functions/ORDER` lists),
`native/` the BM25 kernel's extension sources. Read with importlib.resources, so an installed wheel
carries them."""
