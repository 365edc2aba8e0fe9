// Every {{label}} node's id and properties (no embedding), by id: the tables of the linking pass.
// A template, rendered for the labels linking reads.
MATCH (n:{{label}})
RETURN n.id AS id, n {.*, embedding: null} AS props
ORDER BY id
