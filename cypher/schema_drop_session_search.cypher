// Dropped on start when it was made on other properties than today's; recreated at once.
DROP INDEX session_search IF EXISTS
