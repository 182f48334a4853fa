// Closed sessions not yet extracted with $version and not claimed by a live run, oldest first.
MATCH (s:Session)
WHERE s.status = 'closed'
  AND ($project IS NULL OR s.project = $project)
  AND ($since IS NULL OR coalesce(s.closed_at, s.last_activity_at) >= $since)
  AND NOT $version IN coalesce(s.extracted_versions, [])
  AND coalesce(s.extract_claim_until, 0) < $now
RETURN s.id AS id, s.project AS project
ORDER BY coalesce(s.closed_at, s.last_activity_at) ASC, s.id ASC
LIMIT $limit
