// Drop an index by name; 5.26 accepts the name as a parameter.
DROP INDEX $name IF EXISTS
