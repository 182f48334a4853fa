// Files a session touched, and whether it wrote them.
MATCH (s:Session {id: $session_id, project: $project})<-[:PART_OF]-(:Operation)-[t:TOUCHED]->(f:File)
RETURN f.path AS path, max(CASE t.mode WHEN 'write' THEN 1 ELSE 0 END) = 1 AS written
ORDER BY path
LIMIT 500
