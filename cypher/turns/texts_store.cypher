// Stores the backfilled search texts of memories and sessions, with their identifiers' parts.
UNWIND $rows AS row
OPTIONAL MATCH (m:Memory {id: row.id}) WHERE row.label = 'memory'
OPTIONAL MATCH (s:Session {id: row.id}) WHERE row.label = 'session'
FOREACH (_ IN CASE WHEN m IS NULL THEN [] ELSE [1] END |
  SET m.search_text = row.text, m.search_parts = row.parts)
FOREACH (_ IN CASE WHEN s IS NULL THEN [] ELSE [1] END |
  SET s.search_text = row.text, s.search_parts = row.parts)
