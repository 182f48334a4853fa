// Every operation of the given sessions with the seq of each operation it FOLLOWS, for the
// exactly-once check of `cairn-bench faults`.
MATCH (o:Operation {project: $project})
WHERE o.session_id IN $sessions
RETURN o.id AS id, o.session_id AS session_id, o.seq AS seq,
       [(o)-[:FOLLOWS]->(p:Operation) | p.seq] AS follows
