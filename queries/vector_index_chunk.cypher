// One HNSW index per embedded label. The dimension is a parameter (accepted in OPTIONS by 5.26);
// quantization is off so that scores are exact float cosines, as in the embedded store.
CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS
FOR (n:CHUNK) ON n.embedding
OPTIONS {indexConfig: {
    `vector.dimensions`: $dim,
    `vector.similarity_function`: 'cosine',
    `vector.quantization.enabled`: false
}}
