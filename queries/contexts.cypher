// For each id of $ids in order: the code node (IMPL or BLOCK; other or unknown ids yield no row),
// its function (IMPL and NAME) and its direct children spans sorted by start line.
UNWIND range(0, size($ids) - 1) AS position
WITH position, $ids[position] AS id
CALL (id) {
    MATCH (node:IMPL {id: id})
    RETURN node, node AS impl, 'IMPL' AS label, COLLECT {
        MATCH (node)-[:HAS_BLOCK]->(child:BLOCK)
        WITH child ORDER BY child.start_line, child.id
        RETURN child {.id, .start_line, .end_line}
    } AS children
  UNION ALL
    MATCH (node:BLOCK {id: id})
    MATCH (impl:IMPL {id: node.impl_id})
    RETURN node, impl, 'BLOCK' AS label, COLLECT {
        MATCH (node)-[:PARENT]->(child:BLOCK)
        WITH child ORDER BY child.start_line, child.id
        RETURN child {.id, .start_line, .end_line}
    } AS children
}
MATCH (name:NAME)-[:HAS_IMPL]->(impl)
RETURN
    id, label, node.text AS text, node.start_line AS start_line, node.end_line AS end_line,
    impl.id AS impl_id,
    name {.id, .name, .source, .row, .lang, .start_line, .end_line} AS name,
    children
ORDER BY position
