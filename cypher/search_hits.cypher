// What a search hit shows, for the fused candidates.
UNWIND $ids AS id
MATCH (s:Session {id: id, project: $project})
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       coalesce(s.search_files, []) AS files, coalesce(s.search_importance, 0.0) AS importance,
       s.last_activity_at AS last_activity_at
