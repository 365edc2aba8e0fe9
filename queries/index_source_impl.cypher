// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX impl_source IF NOT EXISTS FOR (n:IMPL) ON (n.source)
