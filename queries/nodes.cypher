// The nodes of $ids, in order, with their label and properties (no embedding); unknown ids yield
// no row. One branch per label, so that every lookup seeks that label's id index.
UNWIND range(0, size($ids) - 1) AS position
WITH position, $ids[position] AS id
CALL (id) {
    MATCH (n:NAME {id: id}) RETURN n, 'NAME' AS label
  UNION ALL
    MATCH (n:IMPL {id: id}) RETURN n, 'IMPL' AS label
  UNION ALL
    MATCH (n:BLOCK {id: id}) RETURN n, 'BLOCK' AS label
  UNION ALL
    MATCH (n:ROW {id: id}) RETURN n, 'ROW' AS label
  UNION ALL
    MATCH (n:CHUNK {id: id}) RETURN n, 'CHUNK' AS label
  UNION ALL
    MATCH (n:PATH {id: id}) RETURN n, 'PATH' AS label
  UNION ALL
    MATCH (n:PATHVALUE {id: id}) RETURN n, 'PATHVALUE' AS label
  UNION ALL
    MATCH (n:FILE {id: id}) RETURN n, 'FILE' AS label
  UNION ALL
    MATCH (n:CLASS {id: id}) RETURN n, 'CLASS' AS label
  UNION ALL
    MATCH (n:MODULE {id: id}) RETURN n, 'MODULE' AS label
}
RETURN id, label, n {.*, embedding: null} AS props
ORDER BY position
