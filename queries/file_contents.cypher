// The CONTAINS edges of the files whose path is $source or ends with "/" + $source: those of the
// FILE node and those of its classes, by container then contained id.
MATCH (f:FILE)
WHERE f.source = $source OR f.source ENDS WITH '/' + $source
CALL (f) {
    MATCH (f)-[:CONTAINS]->(b) RETURN f.id AS src, b.id AS dst
  UNION ALL
    MATCH (c:CLASS {source: f.source})-[:CONTAINS]->(b) RETURN c.id AS src, b.id AS dst
}
RETURN src, dst
ORDER BY src, dst
