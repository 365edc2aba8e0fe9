// BLOCK -> directly nested BLOCK edges: $rows = [{src, dst}].
UNWIND $rows AS row
MATCH (a:BLOCK {id: row.src})
MATCH (b:BLOCK {id: row.dst})
MERGE (a)-[:PARENT]->(b)
