// Insert or replace ROW nodes: $rows = [{id, props, embedding}]; null props are left unset.
UNWIND $rows AS row
MERGE (n:ROW {id: row.id})
SET n = row.props, n.id = row.id, n.embedding = row.embedding
