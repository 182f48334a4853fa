// Rewrites search texts made again whole, each only while it still holds what was read
// (`row.was`): a text written meanwhile is left as it is. An operation embedded from its old
// text loses the record of its vector and passages, and its session's cursor moves back to
// before it, so the turn indexer embeds it again (its words find it meanwhile). The session's
// resets count up: a pass that read the old text before this and writes after it stores
// nothing and moves no cursor, even where the cursor stood before the operation already.
UNWIND $rows AS row
MATCH (n)
WHERE elementId(n) = row.eid AND n.search_text = row.was
SET n.search_text = row.text, n.search_parts = row.parts
WITH n
WHERE n:Operation AND (n.embedding_model IS NOT NULL OR n.passages_model IS NOT NULL)
REMOVE n.embedding_model, n.passages_model
WITH n
MATCH (s:Session {id: n.session_id, project: n.project})
SET s.turns_pending = true,
    s.turns_resets = coalesce(s.turns_resets, 0) + 1,
    s.turns_seq = CASE WHEN coalesce(s.turns_seq, 0) >= n.seq THEN n.seq - 1
                       ELSE s.turns_seq END
