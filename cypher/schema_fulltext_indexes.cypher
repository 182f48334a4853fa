// The full-text indexes and the properties each was created on.
SHOW FULLTEXT INDEXES YIELD name, properties, state, populationPercent
RETURN name, properties, state, populationPercent
