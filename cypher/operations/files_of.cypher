// Files touched in the given sessions: one row per path, newest reference first, with the
// sessions that touched it.
UNWIND $sessions AS sid
MATCH (o:Operation {session_id: sid, project: $project})-[t:TOUCHED]->(f:File)
USING INDEX o:Operation(session_id, seq)
WHERE o.seq >= 0
WITH f.path AS path, sid, o.at AS at, o.seq AS seq, t.mode AS mode
ORDER BY at DESC, seq DESC
WITH path, collect(DISTINCT sid) AS sessions, head(collect(mode)) AS mode, max(at) AS at
RETURN path, mode, sessions, at
ORDER BY at DESC, path
LIMIT $limit
