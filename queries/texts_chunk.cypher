// Every CHUNK node's id and text, by id: the documents of a BM25 index.
MATCH (n:CHUNK)
RETURN n.id AS id, n.text AS text
ORDER BY id
