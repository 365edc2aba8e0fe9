// IMPL ids of at most $limit functions, by file, row and line: those whose qualified name is $name or
// ends with "." + $name, in files whose path is $source or ends with "/" + $source (null matches any).
MATCH (name:NAME)-[:HAS_IMPL]->(impl:IMPL)
WHERE ($name IS NULL OR name.name = $name OR name.name ENDS WITH '.' + $name)
  AND ($source IS NULL OR name.source = $source OR name.source ENDS WITH '/' + $source)
RETURN impl.id AS id
ORDER BY name.source, coalesce(name.row, 0), name.start_line, impl.id
LIMIT $limit
