// How many turns a project holds, roughly: its sessions' operations (by their lengths) and one
// summary per session.
MATCH (s:Session {project: $project})
RETURN sum(coalesce(s.last_seq, 0)) + count(s) AS n
