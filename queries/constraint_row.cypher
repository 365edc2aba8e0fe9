// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT row_id IF NOT EXISTS FOR (n:ROW) REQUIRE n.id IS UNIQUE
