// FILE -> MODULE or FILE edges: $rows = [{src, dst}]. The target is one label or the other, so both
// lookups are tried (each seeks its label's id index).
UNWIND $rows AS row
MATCH (a:FILE {id: row.src})
CALL (row) {
    MATCH (b:MODULE {id: row.dst}) RETURN b
  UNION
    MATCH (b:FILE {id: row.dst}) RETURN b
}
MERGE (a)-[:IMPORTS]->(b)
