-- V14: an audit row's detail is held to one JSON text, so that anyone holding the row as JSON
-- (an export, `--json audit`) can rebuild the exact bytes its hash and its leaf commit to
-- (docs/audit.md, "The bytes of a detail"; contract C41).
--
-- The form is the one the library has always written: a JSON object with no whitespace
-- outside strings; each object's keys in ascending order of their UTF-8 bytes, none twice;
-- numbers integers only, in plain decimal; strings with `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
-- `\t`, `\u00XX` (lower-case hex) for the other characters below U+0020, and every other
-- character as itself in UTF-8. Python writes it with
-- `json.dumps(detail, ensure_ascii=False, separators=(",", ":"), sort_keys=True)`.
--
-- A row that is not in this form could be hashed and signed, and yet nobody could check it
-- from its JSON: so it is refused, whoever appends it. Rows already in the trail are left as
-- they are (the library wrote them in this form; `verify` checks every row's hash as stored).
--
-- How the trigger checks it without a JSON writer of its own, with the stock shell's
-- functions only (the same on SQLite 3.40 and later):
--   * keys in order, none twice: no two members of one object whose later key is not
--     greater (json_tree lists members in text order; BINARY compares UTF-8 bytes);
--   * every other part at its shortest: the text is as long as the sum of each part's
--     shortest form (json_quote() of each string and key, the decimal text of each integer,
--     the fixed width of literals and brackets, one separator between members): a space, a
--     longer escape (`\u00e9` for `é`, `\/`), a number's other spelling (`1.0`, `-0`, `1e2`),
--     or any fraction makes it longer, since a real number is no part at all here;
--   * the one escape of the same length as its shortest form, `\u001F` for `\u001f`, is looked
--     for in the text with every `\\` (an escaped backslash) taken out first.
--
-- This file has shipped once it is released: never edit it, add V15__*.sql instead.

CREATE TRIGGER audit_detail_is_canonical
BEFORE INSERT ON audit
-- Not JSON at all is the CHECK's to refuse, with its own message.
WHEN json_valid(NEW.detail) AND (
     EXISTS (SELECT 1 FROM json_tree(NEW.detail) AS a
               JOIN json_tree(NEW.detail) AS b ON b.parent = a.parent AND b.id > a.id
              WHERE typeof(a.key) = 'text' AND a.key >= b.key)
  OR (SELECT sum(CASE type
                   WHEN 'text' THEN length(CAST(json_quote(atom) AS BLOB))
                   WHEN 'integer' THEN length(CAST(atom AS TEXT))
                   WHEN 'object' THEN 2 WHEN 'array' THEN 2
                   WHEN 'true' THEN 4 WHEN 'null' THEN 4 WHEN 'false' THEN 5
                   -- A real number: never its shortest form, since it has none here.
                   ELSE length(CAST(NEW.detail AS BLOB)) + 1
                 END
                 + CASE WHEN typeof(key) = 'text'
                        THEN length(CAST(json_quote(key) AS BLOB)) + 1 ELSE 0 END)
             -- one ',' between two members: every member but the first of its parent
             + count(parent) - count(DISTINCT parent)
        FROM json_tree(NEW.detail)) IS NOT length(CAST(NEW.detail AS BLOB))
  OR replace(NEW.detail, '\\', '') GLOB '*\u000[BEF]*'
  OR replace(NEW.detail, '\\', '') GLOB '*\u001[A-F]*')
BEGIN
    -- contract C41: an audit detail has one JSON form
    SELECT RAISE(ABORT, 'session-ledger: an audit detail must be canonical JSON: keys sorted, no spaces, integers, shortest escapes (docs/audit.md)');
END;
