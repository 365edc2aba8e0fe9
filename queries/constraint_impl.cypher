// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT impl_id IF NOT EXISTS FOR (n:IMPL) REQUIRE n.id IS UNIQUE
