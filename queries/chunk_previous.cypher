// For each CHUNK id of $ids, the id of the chunk that precedes it in its file (if any).
UNWIND $ids AS id
MATCH (other:CHUNK)-[:NEXT]->(:CHUNK {id: id})
RETURN id, other.id AS neighbour
