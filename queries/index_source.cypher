// Incremental builds drop a file's nodes by their source path: look them up by index.
// A template, rendered for each label of the schema table.
CREATE INDEX {{name}} IF NOT EXISTS FOR (n:{{label}}) ON (n.source)
