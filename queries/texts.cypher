// Every {{label}} node's id and text, by id: the documents of a BM25 index.
// A template, rendered for each label of the schema table whose nodes have a text.
MATCH (n:{{label}})
RETURN n.id AS id, n.text AS text
ORDER BY id
