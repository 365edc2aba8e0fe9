// Record the embedder that builds the database.
MERGE (m:PKG_META {key: $key})
SET m.embedder = $embedder, m.dim = $dim
