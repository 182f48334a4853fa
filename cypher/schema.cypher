// cairn schema, applied by `cairn migrate` and on `cairn serve` start. Every statement is
// idempotent (IF NOT EXISTS). Statements are separated by semicolons at line ends.
// Bump SCHEMA_VERSION in src/graph/schema.rs whenever this file changes.

// Identity: one node per id.
CREATE CONSTRAINT project_id IF NOT EXISTS FOR (n:Project) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT session_id IF NOT EXISTS FOR (n:Session) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT operation_id IF NOT EXISTS FOR (n:Operation) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT decision_id IF NOT EXISTS FOR (n:Decision) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT option_id IF NOT EXISTS FOR (n:Option) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT belief_id IF NOT EXISTS FOR (n:Belief) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT pattern_id IF NOT EXISTS FOR (n:Pattern) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (n:Memory) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT extraction_run_id IF NOT EXISTS FOR (n:ExtractionRun) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT api_key_id IF NOT EXISTS FOR (n:ApiKey) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT audit_event_id IF NOT EXISTS FOR (n:AuditEvent) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT schema_meta_id IF NOT EXISTS FOR (n:SchemaMeta) REQUIRE n.id IS UNIQUE;
// Leases of background jobs shared by replicas (the extraction schedule, the idle sweep).
CREATE CONSTRAINT lease_name IF NOT EXISTS FOR (n:Lease) REQUIRE n.name IS UNIQUE;
// A file is identified by its project-relative path within its project.
CREATE CONSTRAINT file_identity IF NOT EXISTS FOR (n:File) REQUIRE (n.project, n.path) IS UNIQUE;

// Project scoping: every label is looked up by project.
CREATE INDEX session_project IF NOT EXISTS FOR (n:Session) ON (n.project, n.last_activity_at);
CREATE INDEX session_status IF NOT EXISTS FOR (n:Session) ON (n.status, n.last_activity_at);
CREATE INDEX operation_project IF NOT EXISTS FOR (n:Operation) ON (n.project);
CREATE INDEX operation_session_seq IF NOT EXISTS FOR (n:Operation) ON (n.session_id, n.seq);
CREATE INDEX operation_project_type IF NOT EXISTS FOR (n:Operation) ON (n.project, n.type);
CREATE INDEX decision_project_subject IF NOT EXISTS FOR (n:Decision) ON (n.project, n.subject_key);
CREATE INDEX decision_session IF NOT EXISTS FOR (n:Decision) ON (n.session_id);
CREATE INDEX option_project IF NOT EXISTS FOR (n:Option) ON (n.project);
CREATE INDEX belief_project IF NOT EXISTS FOR (n:Belief) ON (n.project, n.status);
CREATE INDEX pattern_project IF NOT EXISTS FOR (n:Pattern) ON (n.project);
CREATE INDEX memory_project IF NOT EXISTS FOR (n:Memory) ON (n.project);
CREATE INDEX memory_session IF NOT EXISTS FOR (n:Memory) ON (n.session_id);
CREATE INDEX extraction_run_project IF NOT EXISTS FOR (n:ExtractionRun) ON (n.project);
CREATE INDEX api_key_project IF NOT EXISTS FOR (n:ApiKey) ON (n.project);
CREATE INDEX api_key_hash IF NOT EXISTS FOR (n:ApiKey) ON (n.hash);
CREATE INDEX audit_event_project IF NOT EXISTS FOR (n:AuditEvent) ON (n.project);

// Text search over what people and agents wrote (BM25).
CREATE FULLTEXT INDEX cairn_text IF NOT EXISTS
FOR (n:Session|Operation|Decision|Belief|Memory)
ON EACH [n.task, n.summary, n.search_doc, n.content, n.subject, n.choice, n.rationale];

// Meaning search over session embeddings; the dimension comes from configuration.
CREATE VECTOR INDEX session_embedding IF NOT EXISTS
FOR (n:Session) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}};

// Pattern extraction: rejected content / evidence lookups and run listings.
CREATE INDEX pattern_evidence_key IF NOT EXISTS FOR (n:Pattern) ON (n.project, n.evidence_key);
CREATE CONSTRAINT belief_content_identity IF NOT EXISTS FOR (n:Belief) REQUIRE (n.project, n.content_key) IS UNIQUE;
// Beliefs alone, with their project, so a related-belief lookup is narrowed to one project
// inside Lucene and costs what the project's beliefs cost, not every operation's text.
CREATE FULLTEXT INDEX belief_text IF NOT EXISTS
FOR (n:Belief) ON EACH [n.content, n.project];
CREATE INDEX extraction_run_started IF NOT EXISTS FOR (n:ExtractionRun) ON (n.project, n.started_at);
// Search and handover: the per-session search document and the parts of the identifiers in
// it (BM25, English stemming; the project is indexed too so a query is narrowed to one
// project inside Lucene), and the background indexer's work queues. One made without the
// parts is dropped on start and made again (`graph::schema`).
CREATE FULLTEXT INDEX session_search IF NOT EXISTS
FOR (n:Session) ON EACH [n.search_doc, n.search_doc_parts, n.project]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
CREATE INDEX session_search_dirty IF NOT EXISTS FOR (n:Session) ON (n.search_dirty);
CREATE INDEX session_embed_pending IF NOT EXISTS FOR (n:Session) ON (n.embed_pending);
// Decisions and beliefs of a project whatever their subject or status (context, knowledge,
// handover): the composite indexes above are not used for a predicate on `project` alone,
// and without these the planner scans the label across every project.
CREATE INDEX decision_project IF NOT EXISTS FOR (n:Decision) ON (n.project);
CREATE INDEX belief_project_any_status IF NOT EXISTS FOR (n:Belief) ON (n.project);
// Turn search: the bounded search text of each operation, memory and session summary and the
// parts of the identifiers in it (BM25, English stemming, the project indexed too so a query
// is narrowed inside Lucene). Kept eventually consistent: Neo4j updates it after commit, off
// capture's write path. One made without the parts is dropped on start and made again
// (`graph::schema`).
CREATE FULLTEXT INDEX turn_search IF NOT EXISTS
FOR (n:Operation|Memory|Session) ON EACH [n.search_text, n.search_parts, n.project]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: true}};
// Meaning search over operations; each vector records the model and dimension that made it.
CREATE VECTOR INDEX operation_embedding IF NOT EXISTS
FOR (n:Operation) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}};
// Meaning search over the passages of long operations (src/domain/passages.rs): each
// passage names its operation, project and session, and records the model that made it.
CREATE VECTOR INDEX passage_embedding IF NOT EXISTS
FOR (n:Passage) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}};
CREATE INDEX passage_operation IF NOT EXISTS FOR (n:Passage) ON (n.operation_id);
CREATE INDEX passage_project IF NOT EXISTS FOR (n:Passage) ON (n.project);
CREATE INDEX passage_session IF NOT EXISTS FOR (n:Passage) ON (n.session_id);
// Sessions with operations the turn indexer has not processed (with the configured model).
CREATE INDEX session_turns_pending IF NOT EXISTS FOR (n:Session) ON (n.turns_pending);
// Sessions with operations whose search texts are still to be made: the only queue of an
// instance without an embedding model (the one above never empties without vectors).
CREATE INDEX session_turns_texts_pending IF NOT EXISTS FOR (n:Session) ON (n.turns_texts_pending);
// Child sessions (subagents): a session waiting for its parent, or for the operation that
// launched it, is found by these when the other side arrives.
CREATE INDEX session_parent IF NOT EXISTS FOR (n:Session) ON (n.parent);
CREATE INDEX session_spawned_by IF NOT EXISTS FOR (n:Session) ON (n.spawned_by);
// Web UI sign-ins: found by the digest of the cookie's random id; the project's, swept when
// one of them signs in.
CREATE CONSTRAINT ui_session_hash IF NOT EXISTS FOR (n:UiSession) REQUIRE n.hash IS UNIQUE;
CREATE INDEX ui_session_project IF NOT EXISTS FOR (n:UiSession) ON (n.project, n.expires_at);
