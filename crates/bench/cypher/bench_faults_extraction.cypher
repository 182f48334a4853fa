// Per session: whether an extraction run claimed it, and how many patterns name it, for the
// no-half-written-results check of `cairn-bench faults`.
UNWIND $sessions AS sid
MATCH (s:Session {id: sid, project: $project})
RETURN sid AS session_id,
       size(coalesce(s.extracted_versions, [])) > 0 AS extracted,
       COUNT { MATCH (p:Pattern {project: $project}) WHERE sid IN p.session_ids } AS patterns
