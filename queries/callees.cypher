// The CALLS edges out of the NAME nodes of $ids, by caller, line and callee.
UNWIND $ids AS id
MATCH (a:NAME {id: id})-[r:CALLS]->(b:NAME)
RETURN a.id AS name_id, b.id AS other_id, r.line AS line, r.resolution AS resolution
ORDER BY name_id, line, other_id
