// One page of operations (by id, after $after): the vectors among them stored without a
// signature (before signatures were kept), with the model that made each, and the page's
// last id (null past the last operation). A vector is read only when it has no signature.
MATCH (o:Operation)
WHERE o.id > $after
WITH o ORDER BY o.id LIMIT $page
WITH collect(o) AS page
RETURN CASE WHEN size(page) > 0 THEN page[-1].id END AS last, size(page) AS scanned,
       [o IN page WHERE o.embedding_sig IS NULL AND o.embedding_model IS NOT NULL
                  AND o.embedding IS NOT NULL
        | {id: o.id, model: o.embedding_model, vector: o.embedding}] AS unsigned
