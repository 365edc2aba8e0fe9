// Top $k nodes of one label's own vector index, from $candidates >= $k approximate neighbours
// (the HNSW search explores only as many as it is asked for). Neo4j's cosine score is (1 + cos) / 2.
CALL db.index.vector.queryNodes($index, $candidates, $vector) YIELD node, score
RETURN node.id AS id, score
ORDER BY score DESC, id
LIMIT $k
