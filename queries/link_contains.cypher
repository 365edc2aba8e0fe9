// FILE or CLASS -> CLASS or NAME edges: $rows = [{src, dst}]. Each end is one label or the other, so
// both lookups are tried (each seeks its label's id index).
UNWIND $rows AS row
CALL (row) {
    MATCH (a:FILE {id: row.src}) RETURN a
  UNION
    MATCH (a:CLASS {id: row.src}) RETURN a
}
CALL (row) {
    MATCH (b:CLASS {id: row.dst}) RETURN b
  UNION
    MATCH (b:NAME {id: row.dst}) RETURN b
}
MERGE (a)-[:CONTAINS]->(b)
