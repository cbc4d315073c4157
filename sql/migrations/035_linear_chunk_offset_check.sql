-- The chunk-offset check of 001 sliced the document once per chunk with substr(). On a UTF-8
-- text, substr() counts characters from the start of the value (and a TOASTed body is fetched
-- and decompressed again each time), so a document with n chunks cost O(n * size): a 10 MB
-- record took minutes here. Now each document is cut once into 255-character blocks (the
-- largest bounded repeat PostgreSQL's regex accepts) held in an expanded array, and each chunk
-- is compared with the few blocks it spans: linear in the document's size.
CREATE OR REPLACE FUNCTION forum.check_chunk_offsets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  c       record;
  doc     bigint;
  blocks  text[];
  piece   text;
BEGIN
  FOR c IN SELECT document_id, chunk_key, start_char, end_char, body FROM new_chunks ORDER BY document_id LOOP
    IF doc IS DISTINCT FROM c.document_id THEN
      doc := c.document_id;
      blocks := ARRAY(SELECT r.m[1]
                        FROM forum.documents d, regexp_matches(d.body, '.{1,255}', 'g') WITH ORDINALITY AS r(m, k)
                       WHERE d.document_id = doc ORDER BY r.k);
    END IF;
    piece := '';
    FOR k IN c.start_char / 255 + 1 .. (c.end_char - 1) / 255 + 1 LOOP
      piece := piece || blocks[k];  -- past the document's end blocks[k] is NULL, and so is piece
    END LOOP;
    IF substr(piece, c.start_char % 255 + 1, c.end_char - c.start_char) IS DISTINCT FROM c.body THEN
      RAISE EXCEPTION 'chunk % does not match its document at its offsets', c.chunk_key
        USING ERRCODE = 'check_violation';
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
