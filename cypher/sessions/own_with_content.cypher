// The waking session itself when it has content (operations or a summary) and is no child
// session: a resumed or compacted session's own recap.
MATCH (s:Session {id: $exclude})
WHERE s.project = $project
  AND s.parent IS NULL
  AND (coalesce(s.op_count, 0) > 0 OR s.summary IS NOT NULL)
RETURN s.id AS id, s.task AS task, s.summary AS summary, s.status AS status,
       s.last_activity_at AS last_activity_at
