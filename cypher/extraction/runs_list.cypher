// A project's extraction runs, newest first.
MATCH (r:ExtractionRun {project: $project})
WITH r ORDER BY r.started_at DESC LIMIT $limit
RETURN r.id AS id, r.project AS project, r.status AS status, r.mode AS mode,
       r.prompt_version AS prompt_version, r.started_at AS started_at,
       r.finished_at AS finished_at, coalesce(r.errors, []) AS errors,
       coalesce(r.sessions, 0) AS sessions, coalesce(r.sessions_failed, 0) AS sessions_failed,
       coalesce(r.candidates, 0) AS candidates, coalesce(r.patterns, 0) AS patterns,
       coalesce(r.beliefs_created, 0) AS beliefs_created,
       coalesce(r.beliefs_reinforced, 0) AS beliefs_reinforced,
       coalesce(r.beliefs_contradicted, 0) AS beliefs_contradicted,
       coalesce(r.beliefs_suppressed, 0) AS beliefs_suppressed,
       coalesce(r.evidence_rejected, 0) AS evidence_rejected,
       coalesce(r.llm_calls, 0) AS llm_calls,
       coalesce(r.prompt_tokens, 0) AS prompt_tokens,
       coalesce(r.completion_tokens, 0) AS completion_tokens,
       coalesce(r.cost_estimate, 0.0) AS cost_estimate,
       coalesce(r.duration_ms, 0) AS duration_ms
