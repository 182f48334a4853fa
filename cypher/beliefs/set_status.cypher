// Moves a belief through the approval workflow; `previous` is null when it does not exist.
MATCH (b:Belief {id: $id, project: $project})
WITH b, b.status AS previous
SET b.status = CASE WHEN previous IN $from THEN $to ELSE previous END,
    b.reviewed_at = CASE WHEN previous IN $from THEN $now ELSE b.reviewed_at END,
    b.reviewed_by = CASE WHEN previous IN $from THEN $actor ELSE b.reviewed_by END
RETURN previous, b.status AS status
