// What a search hit shows, for the fused candidates, with what context needs of a session,
// and which of the session's own lists could hold it: its words (a search document made)
// and its meaning (a vector of $model, null in full-text mode).
UNWIND $ids AS id
MATCH (s:Session {id: id, project: $project})
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       coalesce(s.search_files, []) AS files, coalesce(s.search_importance, 0.0) AS importance,
       s.llm_summary AS llm_summary, s.started_at AS started_at,
       s.last_activity_at AS last_activity_at, coalesce(s.op_count, 0) AS operation_count,
       s.search_doc IS NOT NULL AS worded,
       coalesce(s.embedding_model = $model, false) AS vectored
