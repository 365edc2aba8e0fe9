// Names of all constraints.
SHOW CONSTRAINTS YIELD name
RETURN name
