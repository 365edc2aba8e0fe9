// Insert or replace {{label}} nodes: $rows = [{id, props, embedding}]; null props are left unset.
// setNodeVectorProperty stores the vector as float[] (SET would store double[], twice the size).
// A template, rendered for each label of the schema table.
UNWIND $rows AS row
MERGE (n:{{label}} {id: row.id})
SET n = row.props, n.id = row.id
WITH n, row
WHERE row.embedding IS NOT NULL
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
