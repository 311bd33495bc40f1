-- V5: counting a creator's live children without reading the ones that ended.
--
-- Rule S2 bounds how many live children a creator has at once. The count went through
-- sessions_by_creator, which holds every child the creator ever made, and looked up each row
-- for origin and ended_at: a conductor that had made 10,000 workers over its life read 10,000
-- rows on every create, although at most max_live_children of them were live. This partial
-- index holds only live created children, so the count reads at most that many index entries.
-- origin and ended_at are indexed too (constant in every entry) so that the count is answered
-- from the index alone, without looking up the table rows. It costs one index entry per
-- create, removed again when the child ends.
CREATE INDEX sessions_live_children ON sessions (created_by, origin, ended_at)
 WHERE origin = 'created' AND ended_at IS NULL;
