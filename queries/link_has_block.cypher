// IMPL -> top-level BLOCK edges: $rows = [{src, dst}].
UNWIND $rows AS row
MATCH (a:IMPL {id: row.src})
MATCH (b:BLOCK {id: row.dst})
MERGE (a)-[:HAS_BLOCK]->(b)
