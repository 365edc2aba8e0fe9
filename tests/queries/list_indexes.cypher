// Names of all indexes except the built-in token lookup ones (constraint-backed ones included).
SHOW INDEXES YIELD name, type
WHERE type <> 'LOOKUP'
RETURN name
