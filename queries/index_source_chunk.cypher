// Incremental builds drop a file's nodes by their source path: look them up by index.
CREATE INDEX chunk_source IF NOT EXISTS FOR (n:CHUNK) ON (n.source)
