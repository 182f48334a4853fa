// The sessions an instance without an embedding model works through: pending for search
// texts alone. Followed by work.cypher or lag.cypher.
MATCH (s:Session)
WHERE s.turns_texts_pending = true
