// Delete every node and relationship (tests start from an empty database).
MATCH (n)
DETACH DELETE n
