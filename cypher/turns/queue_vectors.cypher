// The sessions an instance with an embedding model works through: pending for its vectors
// (texts come with them). Followed by work.cypher or lag.cypher.
MATCH (s:Session)
WHERE s.turns_pending = true
