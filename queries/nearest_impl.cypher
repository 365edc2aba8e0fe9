// search.cypher on the IMPL index, each hit with its context as contexts.cypher returns it (its
// function's NAME and its direct children spans by start line), in one round trip.
CALL db.index.vector.queryNodes($index, $candidates, $vector) YIELD node
WITH node, vector.similarity.cosine(node.embedding, $vector) AS score
ORDER BY score DESC, node.id
LIMIT $k
MATCH (name:NAME)-[:HAS_IMPL]->(node)
RETURN
    node.id AS id, 'IMPL' AS label, score, node.text AS text, node.start_line AS start_line,
    node.end_line AS end_line, node.id AS impl_id,
    name {.id, .name, .source, .row, .lang, .start_line, .end_line} AS name,
    COLLECT {
        MATCH (node)-[:HAS_BLOCK]->(child:BLOCK)
        WITH child ORDER BY child.start_line, child.id
        RETURN child {.id, .start_line, .end_line}
    } AS children
ORDER BY score DESC, id
