"""PKG test suite."""
