// The sessions the quality bench's prompt phase left in a project (each question asked as a
// user's prompt is captured like any prompt), with their operations: later runs on the same
// projects must not find the questions themselves.
MATCH (s:Session {project: $project})
WHERE s.id STARTS WITH $prefix
OPTIONAL MATCH (o:Operation {session_id: s.id})
DETACH DELETE o, s
