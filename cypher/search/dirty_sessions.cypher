// What the search documents of the stale sessions in $sessions (dirty_revs.cypher) are built
// from: the decisions, the files (written first, then most touched) and the telling
// operations (anything but plain reads, newest first), each bounded. Each keeps the revision
// read before: the document holds at least what was written up to it, and stays dirty when
// the session moved on since.
UNWIND $sessions AS x
MATCH (s:Session {id: x.id, project: x.project})
RETURN s.id AS id, s.project AS project, x.rev AS rev,
       s.task AS task, s.summary AS summary, coalesce(s.next_steps, []) AS next_steps,
       COLLECT {
         MATCH (d:Decision {project: s.project, session_id: s.id})
         RETURN d {.subject, .choice, .rationale} AS d ORDER BY d.at LIMIT 20
       } AS decisions,
       COLLECT {
         MATCH (s)<-[:PART_OF]-(:Operation)-[t:TOUCHED]->(f:File)
         WITH f.path AS path, max(CASE t.mode WHEN 'write' THEN 1 ELSE 0 END) AS written,
              count(*) AS touches
         RETURN path ORDER BY written DESC, touches DESC, path LIMIT $max_files
       } AS files,
       COLLECT {
         MATCH (s)<-[:PART_OF]-(o:Operation)
         WHERE o.type <> 'read'
         RETURN o {.type, .summary, .role, .content, .rationale} AS o ORDER BY o.seq DESC
         LIMIT $max_operations
       } AS operations,
       COUNT { (s)<-[:PART_OF]-(o:Operation) WHERE o.type = 'write' } AS writes
