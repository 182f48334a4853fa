// Recall benchmark: sessions of the project whose operations carry no vector of $model yet
// (their cursor does not name $cursor, the model with cairn's passage scheme),
// with their operations (a seed step that is resumed where it stopped).
MATCH (s:Session {project: $project})
WHERE coalesce(s.turns_model, '') <> $cursor
WITH s LIMIT $limit
RETURN s.id AS id, s.project AS project, 0 AS after, coalesce(s.last_seq, 0) AS last_seq,
       COLLECT {
         MATCH (o:Operation {session_id: s.id})
         WHERE o.seq > 0
         RETURN o {.id, .seq, .type, .role, .summary, .content, .target, .tool, .rationale,
                   .search_text, .embedding_model} AS o
         ORDER BY o.seq
       } AS ops
