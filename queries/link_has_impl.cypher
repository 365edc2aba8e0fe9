// NAME -> IMPL edges: $rows = [{src, dst}].
UNWIND $rows AS row
MATCH (a:NAME {id: row.src})
MATCH (b:IMPL {id: row.dst})
MERGE (a)-[:HAS_IMPL]->(b)
