// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
CREATE CONSTRAINT pathvalue_id IF NOT EXISTS FOR (n:PATHVALUE) REQUIRE n.id IS UNIQUE
