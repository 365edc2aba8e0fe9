// The IMPL of each NAME node of $ids.
UNWIND $ids AS id
MATCH (name:NAME {id: id})-[:HAS_IMPL]->(impl:IMPL)
RETURN name.id AS name_id, impl.id AS impl_id
