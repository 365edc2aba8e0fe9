// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX path_source IF NOT EXISTS FOR (n:PATH) ON (n.source)
