// One page of sessions (by id, after $after): those the turn indexer never processed
// (captured before the turn index existed) and, with an embedding model ($model not empty),
// those processed without it or under another model are queued for the turn indexer. The
// other models found are named. Sessions with texts still to make join the texts' queue.
MATCH (s:Session)
WHERE s.id > $after
WITH s ORDER BY s.id LIMIT $page
WITH s, (s.turns_text_seq IS NULL OR ($model <> '' AND coalesce(s.turns_model, '') <> $model))
        AND NOT coalesce(s.turns_pending, false) AS stale
FOREACH (_ IN CASE WHEN stale THEN [1] ELSE [] END | SET s.turns_pending = true)
// Texts still to be made, queued apart (sessions captured before that queue was kept, or
// appended to by a cairn from before it).
FOREACH (_ IN CASE WHEN coalesce(s.turns_text_seq, 0) < coalesce(s.last_seq, 0)
                    AND NOT coalesce(s.turns_texts_pending, false) THEN [1] ELSE [] END |
  SET s.turns_texts_pending = true)
RETURN max(s.id) AS last, count(s) AS scanned,
       sum(CASE WHEN stale THEN 1 ELSE 0 END) AS sessions,
       sum(CASE WHEN stale THEN coalesce(s.last_seq, 0) ELSE 0 END) AS operations,
       collect(DISTINCT CASE WHEN stale AND NOT coalesce(s.turns_model, '') IN ['', $model]
                         THEN s.turns_model END)
         AS models
