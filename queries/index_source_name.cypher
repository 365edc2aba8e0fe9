// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX name_source IF NOT EXISTS FOR (n:NAME) ON (n.source)
