-- The BM25 kernel becomes a PostgreSQL extension, atlas_bm25 (sql/native/), with a ledger of installs.
--
-- Until now store/native.py compiled sql/native/bm25_top_k.c by hand each time a database was
-- opened and pointed forum.bm25_native_top_k at '$libdir/atlas_bm25_<hash>': compilation outside
-- any record, stale libraries piling up, and dumps that name a library no other server has. Now
-- `atlas db install-kernel` builds the extension with the server's own PGXS, installs its files and
-- runs CREATE EXTENSION atlas_bm25 (ALTER EXTENSION ... UPDATE when an older version is installed);
-- a dump carries CREATE EXTENSION atlas_bm25, which restores on any server that has the extension.
-- Installing needs a superuser, a compiler and the server's build files on this machine, so it is
-- not a migration: this migration only adds the ledger and makes forum.bm25_engine() name the
-- extension. forum.bm25_search (011) is unchanged: it calls the kernel when forum.bm25_native_top_k
-- exists, the PL/pgSQL MaxScore search otherwise or when the kernel's library does not load.

-- Every install attempt, its outcome and why (`atlas db status` explains a missing kernel from it).
-- An embedded database whose ledger is empty gets one automatic attempt on its first open.
CREATE TABLE forum.kernel_installs (
  install_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at                timestamptz NOT NULL DEFAULT now(),
  trigger           text NOT NULL,      -- 'first open', 'install-kernel', 'ATLAS_BM25_KERNEL=off'
  outcome           text NOT NULL CHECK (outcome IN ('installed', 'updated', 'reinstalled', 'rebuilt', 'kept',
                                                     'removed', 'unavailable', 'failed')),
  version           text,               -- the atlas_bm25 version installed after the attempt (NULL: none)
  available_version text,               -- default_version of the extension sources the attempt used
  compiled          boolean NOT NULL DEFAULT false,  -- whether the attempt ran the compiler
  reason            text NOT NULL DEFAULT ''         -- why it failed or was unavailable; what it changed
);

-- 'C kernel atlas_bm25_<version>' when the extension is installed (it provides
-- forum.bm25_native_top_k, which cannot be dropped while it belongs to it), 'C kernel <library>' for
-- a function created before the extension existed (`atlas db install-kernel` replaces it),
-- 'PL/pgSQL MaxScore' when there is no kernel. forum.bm25_search asks on every search: the extension
-- is looked up first (~10 us; the signature lookup alone costs twice that).
CREATE OR REPLACE FUNCTION forum.bm25_engine() RETURNS text LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT 'C kernel ' || e.extname || '_' || e.extversion FROM pg_extension e WHERE e.extname = 'atlas_bm25'),
    (SELECT 'C kernel ' || regexp_replace(p.probin, '^.*/', '')
       FROM pg_proc p
      WHERE p.oid = to_regprocedure('forum.bm25_native_top_k(text[], double precision[], integer, '
                                    'double precision, double precision, double precision, bigint[])')),
    'PL/pgSQL MaxScore')
$$;
