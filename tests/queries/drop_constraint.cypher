// Drop a constraint (and its backing index) by name; 5.26 accepts the name as a parameter.
DROP CONSTRAINT $name IF EXISTS
