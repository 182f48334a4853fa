// Prompt recall: the operations after each request at the given {session_id, seq} places of
// the project, within $window places (their seq, type and role only, in seq order), to find
// what concluded it. The (session_id, seq) index is named so each range is read from it.
UNWIND $keys AS k
MATCH (o:Operation {session_id: k.session_id})
USING INDEX o:Operation(session_id, seq)
WHERE o.seq > k.seq AND o.seq <= k.seq + $window AND o.project = $project
WITH k, o
ORDER BY o.seq
RETURN k.session_id AS session_id, k.seq AS seq, collect(o.seq) AS seqs,
       collect(coalesce(o.type, '')) AS kinds, collect(coalesce(o.role, '')) AS roles
