// The turn indexer's next work: sessions with operations it has not processed with the
// configured model (texts only, $model empty: past the text cursor; a session queued with
// nothing past it, after a batch of operations already stored, comes with no operations and
// leaves the queue); those whose last attempt
// failed wait for their retry time, then queue as if they had had activity then (not behind
// every session never tried: a backlog would starve them). A session whose first attempt
// failed on another replica ($holder is not `turns_failed_by`) is tried here at once: one
// replica that cannot reach its endpoint holds no session back from the others, while a
// second failure makes every replica wait. Projects take turns: each
// project's newest session first, then each one's second, and so on, so one project's
// backlog (an import, a model switch) cannot hold up another's new work. Each session comes
// with its next operations in seq order (found by the session/seq index); a tool call's
// context only when its search text is still to be made (it holds what the call answered).
// A session another replica claimed for its vectors (sessions/index_claim.cypher) is left to it while the
// claim lasts; texts alone are made by whoever comes (they cost little and nothing else).
// Follows a queue (queue_vectors.cypher, or queue_texts.cypher without a model).
  AND (coalesce(s.turns_retry_at, 0) <= $now
       OR (s.turns_attempts = 1 AND s.turns_failed_by <> $holder))
  AND ($model = '' OR s.index_claim_holder IS NULL OR s.index_claim_holder = $holder
       OR s.index_claim_until <= $now)
WITH s, coalesce(s.last_activity_at, 0) AS active, coalesce(s.turns_retry_at, 0) AS due
WITH s, CASE WHEN due > active THEN due ELSE active END AS queued
ORDER BY queued DESC
WITH s.project AS project, collect([s, queued])[..$sessions] AS line
UNWIND range(0, size(line) - 1) AS turn
WITH line[turn][0] AS s, line[turn][1] AS queued, turn
ORDER BY turn, queued DESC
LIMIT $sessions
WITH s, CASE WHEN $model = '' THEN coalesce(s.turns_text_seq, 0)
            WHEN s.turns_model = $model THEN coalesce(s.turns_seq, 0) ELSE 0 END AS after
RETURN s.id AS id, s.project AS project, after, coalesce(s.last_seq, 0) AS last_seq,
       coalesce(s.turns_resets, 0) AS resets,
       COLLECT {
         MATCH (o:Operation {session_id: s.id})
         WHERE o.seq > after
         RETURN o {.id, .seq, .type, .role, .summary, .content, .target, .tool, .rationale,
                   .search_text, .embedding_model, .passages_model,
                   context: CASE WHEN o.search_text IS NULL AND o.type = 'tool_call'
                                 THEN o.context END} AS o
         ORDER BY o.seq
         LIMIT $per_session
       } AS ops
