// Delete every node and relationship (tests and benches start from an empty database), in
// transactions of 5,000 nodes so that a large graph stays within the server's transaction memory.
// Runs as an auto-commit query (CALL { } IN TRANSACTIONS needs one).
MATCH (n)
CALL (n) {
    DETACH DELETE n
} IN TRANSACTIONS OF 5000 ROWS
