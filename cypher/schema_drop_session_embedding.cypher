// Dropped on start when its dimension differs from the configured model's; recreated at once.
DROP INDEX session_embedding IF EXISTS
