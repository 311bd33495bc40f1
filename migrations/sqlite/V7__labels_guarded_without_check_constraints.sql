-- V7: labels stay monotone even when CHECK constraints are turned off.
--
-- `PRAGMA ignore_check_constraints = ON` is one line in the sqlite3 shell and changes no schema.
-- With it, the CHECKs on labels (taint in the lattice, untrusted 0 or 1, materialized_how
-- 'born' or 'inherited') no longer hold, and the triggers of V1 compared ranks that a value
-- outside the lattice does not have: the comparison is NULL and the trigger does not fire. A
-- secret label could be lowered in two updates (to 'x', then to 'public'), and a label could be
-- inserted with a made-up materialized_how that neither insert trigger looks at. Rule L1 says a
-- hand edit in the shell cannot lower a label; these triggers restate the labels' value checks
-- so that the pragma does not switch them off, and treat a class outside the lattice as the top
-- of it when it is the old value (so a label holding one can only be raised to secret).
--
-- This file has shipped once it is released: never edit it, add V8__*.sql instead.

DROP TRIGGER labels_never_lower;

-- Rule L1: labels are monotone. Neither the taint class nor the untrusted flag can go down, and
-- a label can only take a class of the lattice and a flag of 0 or 1.
CREATE TRIGGER labels_never_lower
BEFORE UPDATE ON labels
WHEN NEW.taint IS NOT 'public' AND NEW.taint IS NOT 'private' AND NEW.taint IS NOT 'secret'
  OR NEW.untrusted IS NOT 0 AND NEW.untrusted IS NOT 1
  OR (CASE NEW.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END)
   < coalesce(CASE OLD.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END, 2)
  OR NEW.untrusted < OLD.untrusted
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: labels only rise, within the lattice (rule L1)');
END;

-- A label is written with a class of the lattice, a flag of 0 or 1, and one of the two ways a
-- label comes to be: the CHECKs of the table, restated where the pragma cannot reach them.
CREATE TRIGGER labels_written_within_the_lattice
BEFORE INSERT ON labels
WHEN NEW.taint IS NOT 'public' AND NEW.taint IS NOT 'private' AND NEW.taint IS NOT 'secret'
  OR NEW.untrusted IS NOT 0 AND NEW.untrusted IS NOT 1
  OR NEW.materialized_how IS NOT 'born' AND NEW.materialized_how IS NOT 'inherited'
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a label is written within the lattice, as born or inherited (rule L1)');
END;
