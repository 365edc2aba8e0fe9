// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX row_source IF NOT EXISTS FOR (n:ROW) ON (n.source)
