// Every PKG node (of one of $labels) with its label and properties (embedding included), for
// whole-graph checks.
MATCH (n)
WHERE any(label IN labels(n) WHERE label IN $labels)
RETURN n.id AS id, labels(n)[0] AS label, properties(n) AS props
