// How many passages the project's operations have, counted up to $cap (the index on the
// project finds them; past the cap the exact count does not matter).
MATCH (p:Passage {project: $project})
WITH p LIMIT $cap
RETURN count(p) AS n
