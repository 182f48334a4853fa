// Lets go of the lease $name if $holder holds it, recording the work of $tick (if any) done.
MATCH (l:Lease {name: $name})
WHERE l.holder = $holder
SET l.holder = null, l.until = null,
    l.done_tick = CASE WHEN $tick IS NOT NULL AND coalesce(l.done_tick, -1) < $tick
                       THEN $tick ELSE l.done_tick END
RETURN count(l) AS released
