// CHUNK -> following CHUNK of the same file: $rows = [{src, dst}].
UNWIND $rows AS row
MATCH (a:CHUNK {id: row.src})
MATCH (b:CHUNK {id: row.dst})
MERGE (a)-[:NEXT]->(b)
