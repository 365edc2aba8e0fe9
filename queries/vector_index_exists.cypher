// Whether the named vector index exists.
SHOW VECTOR INDEXES YIELD name
WHERE name = $index
RETURN count(*) > 0 AS exists
