// Decisions made in the given sessions or naming one of the given files, newest first.
CALL () {
  UNWIND $sessions AS sid
  MATCH (d:Decision {session_id: sid, project: $project})
  RETURN d
  UNION
  MATCH (d:Decision {project: $project})
  WHERE size($files) > 0 AND any(f IN coalesce(d.files, []) WHERE f IN $files)
  RETURN d
}
RETURN d.id AS id, d.subject AS subject, d.choice AS choice, d.rationale AS rationale,
       d.confidence AS confidence, d.at AS at, d.superseded_by AS superseded_by
ORDER BY d.at DESC, d.id DESC
LIMIT $limit
