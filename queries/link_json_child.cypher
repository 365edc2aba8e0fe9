// PATH -> child PATH or PATHVALUE edges: $rows = [{src, dst}]. A child is one or the other, so
// both lookups are tried (each seeks its label's id index).
UNWIND $rows AS row
MATCH (a:PATH {id: row.src})
CALL (row) {
    MATCH (b:PATH {id: row.dst}) RETURN b
  UNION
    MATCH (b:PATHVALUE {id: row.dst}) RETURN b
}
MERGE (a)-[:JSON_CHILD]->(b)
