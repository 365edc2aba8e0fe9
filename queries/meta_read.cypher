// The embedder that built the database, if recorded.
MATCH (m:PKG_META {key: $key})
RETURN m.embedder AS embedder, m.dim AS dim
