// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT name_id IF NOT EXISTS FOR (n:NAME) REQUIRE n.id IS UNIQUE
