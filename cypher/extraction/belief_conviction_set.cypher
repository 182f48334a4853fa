// Stores recomputed convictions (and auto-approvals) so readers can sort by them.
UNWIND $rows AS row
MATCH (b:Belief {id: row.id, project: $project})
SET b.conviction = row.conviction, b.conviction_at = $now,
    b.status = row.status,
    b.approved_at = CASE WHEN row.auto_approved THEN $now ELSE b.approved_at END,
    b.approved_by = CASE WHEN row.auto_approved THEN 'auto' ELSE b.approved_by END
