// The CALLS edges into the NAME nodes of $ids, by callee, line and caller.
UNWIND $ids AS id
MATCH (a:NAME)-[r:CALLS]->(b:NAME {id: id})
RETURN b.id AS name_id, a.id AS other_id, r.line AS line, r.resolution AS resolution
ORDER BY name_id, line, other_id
