// Writes a batch of operations across sessions in one statement. Per session chain: the new
// nodes with PART_OF, FOLLOWS from the rows' own order (no operation is looked up to be linked;
// the first follows the session's old tail) and the new tail. Then TRIGGERED_BY, TOUCHED files
// and INFORMS beliefs (each write counted on the belief, see
// `beliefs/and_memories_fingerprint.cypher`), and SPAWNED_BY from child sessions that named a
// launching operation before it was stored. Each unit subquery runs once, in order, and sees
// what the ones before it wrote.
CALL () {
  UNWIND $chains AS c
  MATCH (s:Session {id: c.session_id})
  OPTIONAL MATCH (tail:Operation {id: c.prev})
  CALL (c, s) {
    UNWIND c.rows AS row
    CREATE (o:Operation)
    SET o = row
    CREATE (o)-[:PART_OF]->(s)
    WITH o ORDER BY o.seq
    RETURN collect(o) AS ops
  }
  CALL (tail, ops) {
    UNWIND range(0, size(ops) - 1) AS i
    WITH ops[i] AS o, CASE i WHEN 0 THEN tail ELSE ops[i - 1] END AS prev
    WITH o, prev WHERE prev IS NOT NULL
    CREATE (o)-[:FOLLOWS]->(prev)
  }
  SET s.last_seq = c.last_seq, s.last_op_id = c.last_op_id,
      s.op_count = coalesce(s.op_count, 0) + size(ops),
      s.tokens = coalesce(s.tokens, 0) + c.tokens
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
  SET r.effect = i.effect, r.weight = i.weight, r.at = i.at,
      b.evidence_writes = coalesce(b.evidence_writes, 0) + 1
}
CALL () {
  UNWIND $spawns AS sp
  MATCH (o:Operation {id: sp.id})
  MATCH (child:Session {spawned_by: sp.id})
  WHERE child.project = sp.project
  MERGE (child)-[:SPAWNED_BY]->(o)
}
