// Node ids are unique per label; MERGE and MATCH on {id} seek this constraint's index.
// A template, rendered for each label of the schema table.
CREATE CONSTRAINT {{name}} IF NOT EXISTS FOR (n:{{label}}) REQUIRE n.id IS UNIQUE
