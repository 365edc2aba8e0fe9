// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX block_source IF NOT EXISTS FOR (n:BLOCK) ON (n.source)
