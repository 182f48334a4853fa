// Every node the project owns. API keys and the audit trail are kept: they are credentials
// and the record of this purge, not memory.
CALL { MATCH (n:Passage {project: $project}) DELETE n }
CALL { MATCH (n:Operation {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Option {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Decision {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Memory {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Pattern {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Belief {project: $project}) DETACH DELETE n }
CALL { MATCH (n:File {project: $project}) DETACH DELETE n }
CALL { MATCH (n:ExtractionRun {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Session {project: $project}) DETACH DELETE n }
CALL { MATCH (n:Project {id: $project}) DETACH DELETE n }
