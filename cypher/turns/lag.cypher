// Operations the turn indexer has not processed with the configured model, in all projects.
// Follows a queue (queue_vectors.cypher, or queue_texts.cypher without a model).
RETURN coalesce(sum(coalesce(s.last_seq, 0) -
       CASE WHEN $model = '' THEN coalesce(s.turns_text_seq, 0)
            WHEN s.turns_model = $model THEN coalesce(s.turns_seq, 0) ELSE 0 END), 0) AS pending
