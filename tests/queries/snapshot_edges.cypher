// Every relationship between PKG nodes, for whole-graph checks.
MATCH (a)-[r]->(b)
RETURN a.id AS src, type(r) AS type, b.id AS dst
