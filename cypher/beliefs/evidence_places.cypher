// Where the evidence of each of the project's beliefs lies: the sessions of the operations
// and decisions that inform it, and the files those operations touched. A task context ties
// beliefs to its sessions and files with these, read while it searches. One pass over the
// project's evidence: it is small next to the sessions' histories.
MATCH (b:Belief {project: $project})<-[:INFORMS]-(x)
WITH b, collect(DISTINCT x.session_id) AS sessions,
     collect(CASE WHEN x:Operation THEN x END) AS operations
RETURN b.id AS id, sessions,
       COLLECT {
         UNWIND operations AS o
         MATCH (o)-[:TOUCHED]->(f:File)
         RETURN DISTINCT f.path
       } AS files
