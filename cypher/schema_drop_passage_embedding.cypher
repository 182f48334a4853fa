// Dropped on start when its dimension differs from the configured model's; recreated at once.
DROP INDEX passage_embedding IF EXISTS
