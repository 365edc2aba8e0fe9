// One PKG_SOURCE node per file the graph was built from.
CREATE CONSTRAINT source_path IF NOT EXISTS FOR (s:PKG_SOURCE) REQUIRE s.path IS UNIQUE
