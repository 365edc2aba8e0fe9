// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT block_id IF NOT EXISTS FOR (n:BLOCK) REQUIRE n.id IS UNIQUE
