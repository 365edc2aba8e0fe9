// Every PKG node with its label and properties (embedding included), for whole-graph checks.
MATCH (n)
WHERE n:NAME OR n:IMPL OR n:BLOCK OR n:ROW OR n:CHUNK OR n:PATH OR n:PATHVALUE
RETURN n.id AS id, labels(n)[0] AS label, properties(n) AS props
