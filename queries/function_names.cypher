// The qualified name of the function of each IMPL node of $ids.
UNWIND $ids AS id
MATCH (name:NAME)-[:HAS_IMPL]->(impl:IMPL {id: id})
RETURN impl.id AS impl_id, name.name AS name
