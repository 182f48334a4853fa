// Takes or renews the lease $name for $holder until $until when it is free, expired or
// already $holder's, unless the work of $tick is done ($tick null: leases without ticks).
// The first SET takes the lease's write lock before its holder is read, so replicas racing
// for it are served one after the other and only one holds it.
MERGE (l:Lease {name: $name})
ON CREATE SET l.created_at = $now
SET l.checked_at = $now
WITH l,
     $tick IS NOT NULL AND coalesce(l.done_tick, -1) >= $tick AS done,
     l.holder IS NULL OR l.holder = $holder OR l.until < $now AS free
SET l.holder = CASE WHEN free AND NOT done THEN $holder ELSE l.holder END,
    l.until = CASE WHEN free AND NOT done THEN $until ELSE l.until END
RETURN CASE WHEN done THEN 'done' WHEN free THEN 'held' ELSE 'busy' END AS state,
       l.holder AS holder, l.until AS until
