// What a project's memories look like, without reading them: how many, the latest and the sum
// of their times, and their tokens in all. Memories are written once and only ever added or
// purged, so any change moves one of these.
MATCH (m:Memory {project: $project})
RETURN count(m) AS memories, coalesce(max(m.at), 0) AS last,
       coalesce(sum(m.at), 0) AS at_sum, coalesce(sum(m.tokens), 0) AS tokens
