MATCH (o:Operation {project: $project})
RETURN count(o) AS n
