// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (n:CHUNK) REQUIRE n.id IS UNIQUE
