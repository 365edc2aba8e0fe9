// Top $k nodes of one label's own vector index. The (int8-quantized) HNSW search proposes
// $candidates >= $k neighbours, exploring only as many as it is asked for; each is then scored
// exactly on its stored float vector, so scores and order are those of an exact search among the
// candidates. Neo4j's cosine similarity is (1 + cos) / 2, in the index and in the function alike.
CALL db.index.vector.queryNodes($index, $candidates, $vector) YIELD node
WITH node, vector.similarity.cosine(node.embedding, $vector) AS score
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
