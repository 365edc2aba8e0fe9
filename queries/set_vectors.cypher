// Give {{label}} nodes new vectors (re-embedding): $rows = [{id, embedding}]; unknown ids match nothing.
// A template, rendered for each embedded label of the schema table.
UNWIND $rows AS row
MATCH (n:{{label}} {id: row.id})
CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
