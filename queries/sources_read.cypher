// Every source file the graph holds, with the fingerprint it was built at.
MATCH (s:PKG_SOURCE)
RETURN s.path AS path, s.fingerprint AS fingerprint
