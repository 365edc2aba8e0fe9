// One HNSW index per embedded label. The dimension, the graph's parameters and quantization are
// parameters (accepted in OPTIONS by 5.26). A quantized index only proposes candidates: search.cypher
// scores them on the stored float vectors, as the embedded store does.
// A template, rendered for each embedded label of the schema table.
CREATE VECTOR INDEX {{name}} IF NOT EXISTS
FOR (n:{{label}}) ON n.embedding
OPTIONS {indexConfig: {
    `vector.dimensions`: $dim,
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: $quantization,
    `vector.hnsw.m`: $m,
    `vector.hnsw.ef_construction`: $ef_construction
}}
