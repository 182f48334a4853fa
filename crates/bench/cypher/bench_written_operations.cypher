// Operations written so far, from the sessions' counters (moved in the same transaction as the
// operations): cheap enough to poll while ingest runs, unlike counting the operations.
MATCH (s:Session {project: $project})
RETURN sum(coalesce(s.op_count, 0)) AS n
