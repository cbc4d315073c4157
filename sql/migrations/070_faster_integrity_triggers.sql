-- Two of the checks every chunk insert runs, made cheaper without checking less (issue 10: a 10 MB
-- record's write spent ~1 s in them).
--
-- 1. The chunk-offset check (035) cut each document into 255-character blocks with a regex, because
--    substr() on UTF-8 text counts characters from the start of the value. A document whose body is
--    ASCII (byte length = character length, the common case) has character offsets equal to byte
--    offsets: its chunks are now compared with a bytea slice, which costs only the slice. Other
--    documents keep the block method.
-- 2. The content digests (032) joined each inserted row back to its table; the transition table
--    already holds the rows as stored (after the BEFORE triggers), so the digests are taken from it.
CREATE OR REPLACE FUNCTION forum.check_chunk_offsets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c           record;
  doc         bigint;
  ascii_body  bytea;    -- the document's body when it is ASCII
  blocks      text[];   -- otherwise its 255-character blocks
  piece       text;
BEGIN
  FOR c IN SELECT document_id, chunk_key, start_char, end_char, body FROM new_chunks ORDER BY document_id LOOP
    IF doc IS DISTINCT FROM c.document_id THEN
      doc := c.document_id;
      SELECT CASE WHEN octet_length(d.body) = char_length(d.body) THEN convert_to(d.body, 'UTF8') END
        INTO ascii_body FROM forum.documents d WHERE d.document_id = doc;
      blocks := CASE WHEN ascii_body IS NULL THEN
                  ARRAY(SELECT r.m[1]
                          FROM forum.documents d, regexp_matches(d.body, '.{1,255}', 'g') WITH ORDINALITY AS r(m, k)
                         WHERE d.document_id = doc ORDER BY r.k) END;
    END IF;
    IF ascii_body IS NOT NULL THEN
      -- past the end the slice is short, and differs from the chunk
      piece := convert_from(substring(ascii_body FROM c.start_char + 1 FOR c.end_char - c.start_char), 'UTF8');
    ELSE
      piece := '';
      FOR k IN c.start_char / 255 + 1 .. (c.end_char - 1) / 255 + 1 LOOP
        piece := piece || blocks[k];  -- past the document's end blocks[k] is NULL, and so is piece
      END LOOP;
      piece := substr(piece, c.start_char % 255 + 1, c.end_char - c.start_char);
    END IF;
    IF piece IS DISTINCT FROM c.body THEN
      RAISE EXCEPTION 'chunk % does not match its document at its offsets', c.chunk_key
        USING ERRCODE = 'check_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- A transition table's rows are of type record: cast to the table's row type for its digest overload.
CREATE OR REPLACE FUNCTION forum.record_content_digests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format(
    'INSERT INTO forum.content_digests (table_name, row_id, digest)
     SELECT %L, t.%2$I, forum.content_digest(t::forum.%1$I) FROM new_rows t ORDER BY 2',
    TG_TABLE_NAME, TG_ARGV[0]);
  RETURN NULL;
END $$;
