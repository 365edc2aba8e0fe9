// For each CHUNK id of $ids, the id of the chunk that follows it in its file (if any).
UNWIND $ids AS id
MATCH (:CHUNK {id: id})-[:NEXT]->(other:CHUNK)
RETURN id, other.id AS neighbour
