// NAME -> NAME edges: $rows = [{src, dst, line, resolution}]; one edge per caller and callee.
UNWIND $rows AS row
MATCH (a:NAME {id: row.src})
MATCH (b:NAME {id: row.dst})
MERGE (a)-[r:CALLS]->(b)
SET r.line = row.line, r.resolution = row.resolution
