-- session-ledger schema on PostgreSQL, version 10: an audit row's detail is held to one JSON
-- text, as SQLite's version 14, so that anyone holding the row as JSON (an export,
-- `--json audit`) can rebuild the exact bytes its hash and its leaf commit to (docs/audit.md,
-- "The bytes of a detail"; contract C41).
--
-- The form is the one the library has always written: a JSON object with no whitespace
-- outside strings; each object's keys in ascending order of their UTF-8 bytes, none twice;
-- numbers integers only (within 64 bits), in plain decimal; strings with `\"`, `\\`, `\b`,
-- `\f`, `\n`, `\r`, `\t`, `\u00XX` (lower-case hex) for the other characters below U+0020,
-- and every other character as itself in UTF-8. Python writes it with
-- `json.dumps(detail, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`.
--
-- A row that is not in this form could be hashed and signed, and yet nobody could check it
-- from its JSON: so it is refused, whoever appends it. The check rebuilds the text from the
-- parsed detail and compares: `jsonb` keeps the last of two equal keys, so a key given twice
-- is refused too. It is added NOT VALID: rows already in the trail are not read again (the
-- library wrote them in this form; `verify` checks every row's hash as stored).
--
-- This file has shipped once it is released: never edit it, add V11__*.sql instead.

-- The one text of a JSON value in the form above; a number outside it (a fraction, an
-- exponent, more than 64 bits) becomes '!', which no JSON text equals.
CREATE FUNCTION ledger_canonical_json(v jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':'
                                                  || ledger_canonical_json(e.value),
                                                  ',' ORDER BY e.key COLLATE "C")
                                  FROM jsonb_each(v) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(ledger_canonical_json(a.value), ',' ORDER BY a.n)
                                  FROM jsonb_array_elements(v) WITH ORDINALITY AS a(value, n)),
                               '') || ']';
    WHEN 'string' THEN
        RETURN to_json(v #>> '{}')::text;
    WHEN 'number' THEN
        IF (v #>> '{}') ~ '^-?(0|[1-9][0-9]{0,18})$'
           AND (v #>> '{}')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 THEN
            RETURN v #>> '{}';
        END IF;
        RETURN '!';
    ELSE
        -- true, false, null
        RETURN v::text;
    END CASE;
END
$$;
COMMENT ON FUNCTION ledger_canonical_json(jsonb) IS
    'session-ledger: C41, the one JSON text of a value as an audit detail holds it (docs/audit.md)';

ALTER TABLE audit ADD CONSTRAINT audit_detail_is_canonical
    CHECK (detail = ledger_canonical_json(detail::jsonb)) NOT VALID;
COMMENT ON CONSTRAINT audit_detail_is_canonical ON audit IS
    'session-ledger: C41, an audit detail is in its one JSON form, so its JSON row rebuilds the hashed bytes';
