// One HNSW index per embedded label. The dimension and the graph's parameters are parameters
// (accepted in OPTIONS by 5.26); quantization is off so that scores are exact float cosines, as
// in the embedded store.
CREATE VECTOR INDEX name_embedding IF NOT EXISTS
FOR (n:NAME) ON n.embedding
OPTIONS {indexConfig: {
    `vector.dimensions`: $dim,
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false,
    `vector.hnsw.m`: $m,
    `vector.hnsw.ef_construction`: $ef_construction
}}
