// Insert or replace CHUNK nodes: $rows = [{id, props, embedding}]; null props are left unset.
UNWIND $rows AS row
MERGE (n:CHUNK {id: row.id})
SET n = row.props, n.id = row.id, n.embedding = row.embedding
