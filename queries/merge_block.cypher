// Insert or replace BLOCK nodes: $rows = [{id, props, embedding}]; null props are left unset.
UNWIND $rows AS row
MERGE (n:BLOCK {id: row.id})
SET n = row.props, n.id = row.id, n.embedding = row.embedding
