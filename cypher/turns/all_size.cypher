// How many turns the database holds, roughly: its operations and one summary per session,
// from Neo4j's counts store (nothing is visited).
CALL () { MATCH (o:Operation) RETURN count(o) AS operations }
CALL () { MATCH (s:Session) RETURN count(s) AS sessions }
RETURN operations + sessions AS n
