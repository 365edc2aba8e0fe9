// CLASS -> base CLASS edges: $rows = [{src, dst}].
UNWIND $rows AS row
MATCH (a:CLASS {id: row.src})
MATCH (b:CLASS {id: row.dst})
MERGE (a)-[:INHERITS]->(b)
