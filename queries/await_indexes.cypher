// Block until every index is online (populated), at most $seconds.
CALL db.awaitIndexes($seconds)
