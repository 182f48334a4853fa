// Stores the parts of the identifiers in search texts read (`row.parts`; none removes them),
// each only while the text still holds what was read (`row.was`).
UNWIND $rows AS row
MATCH (n)
WHERE elementId(n) = row.eid AND n.search_text = row.was
SET n.search_parts = row.parts
