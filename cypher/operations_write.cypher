// Writes a batch of operations across sessions in one statement: nodes and PART_OF, the FOLLOWS
// chain, TRIGGERED_BY, TOUCHED files, INFORMS beliefs, and each session's new tail. Each unit
// subquery runs once, in order, and sees what the ones before it wrote.
CALL () {
  UNWIND $rows AS row
  MATCH (s:Session {id: row.session_id})
  CREATE (o:Operation)
  SET o = row
  CREATE (o)-[:PART_OF]->(s)
}
CALL () {
  UNWIND $links AS l
  MATCH (a:Operation {id: l.id})
  MATCH (b:Operation {id: l.prev})
  CREATE (a)-[:FOLLOWS]->(b)
}
CALL () {
  UNWIND $triggers AS t
  MATCH (a:Operation {id: t.id})
  MATCH (b:Operation {id: t.target})
  WHERE b.project = a.project
  MERGE (a)-[:TRIGGERED_BY]->(b)
}
CALL () {
  UNWIND $touches AS t
  MATCH (o:Operation {id: t.id})
  // No property of an existing File is written here: a write would lock the file for the
  // whole transaction, serialising every writer lane that touches a popular file. When a
  // file was last touched is read from its TOUCHED operations.
  MERGE (f:File {project: t.project, path: t.path})
    ON CREATE SET f.created_at = t.at
  CREATE (o)-[:TOUCHED {mode: t.mode}]->(f)
}
CALL () {
  UNWIND $informs AS i
  MATCH (o:Operation {id: i.id})
  MATCH (b:Belief {id: i.belief, project: i.project})
  MERGE (o)-[r:INFORMS]->(b)
  SET r.effect = i.effect, r.weight = i.weight, r.at = i.at
}
CALL () {
  UNWIND $tails AS t
  MATCH (s:Session {id: t.session_id})
  SET s.last_seq = t.last_seq, s.last_op_id = t.last_op_id,
      s.op_count = coalesce(s.op_count, 0) + t.added,
      s.tokens = coalesce(s.tokens, 0) + t.tokens
}
