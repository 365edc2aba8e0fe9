// At most one metadata node per key.
CREATE CONSTRAINT pkg_meta_key IF NOT EXISTS FOR (m:PKG_META) REQUIRE m.key IS UNIQUE
