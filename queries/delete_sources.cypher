// Drop every node of the files in $paths, with their relationships, and forget the files.
// One branch per label, so that every lookup uses that label's source index.
UNWIND $paths AS path
CALL (path) {
    MATCH (n:NAME {source: path}) RETURN n
  UNION ALL
    MATCH (n:IMPL {source: path}) RETURN n
  UNION ALL
    MATCH (n:BLOCK {source: path}) RETURN n
  UNION ALL
    MATCH (n:ROW {source: path}) RETURN n
  UNION ALL
    MATCH (n:CHUNK {source: path}) RETURN n
  UNION ALL
    MATCH (n:PATH {source: path}) RETURN n
  UNION ALL
    MATCH (n:PATHVALUE {source: path}) RETURN n
  UNION ALL
    MATCH (n:FILE {source: path}) RETURN n
  UNION ALL
    MATCH (n:CLASS {source: path}) RETURN n
  UNION ALL
    MATCH (n:MODULE {source: path}) RETURN n
  UNION ALL
    MATCH (n:PKG_SOURCE {path: path}) RETURN n
}
DETACH DELETE n
