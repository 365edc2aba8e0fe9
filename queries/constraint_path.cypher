// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT path_id IF NOT EXISTS FOR (n:PATH) REQUIRE n.id IS UNIQUE
