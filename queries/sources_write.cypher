// Remember source files and their fingerprints: $rows = [{path, fingerprint}].
UNWIND $rows AS row
MERGE (s:PKG_SOURCE {path: row.path})
SET s.fingerprint = row.fingerprint
