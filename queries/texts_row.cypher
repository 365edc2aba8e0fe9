// Every ROW node's id and text, by id: the documents of a BM25 index.
MATCH (n:ROW)
RETURN n.id AS id, n.text AS text
ORDER BY id
