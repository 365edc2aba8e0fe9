// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX pathvalue_source IF NOT EXISTS FOR (n:PATHVALUE) ON (n.source)
