"""Code structure: the language table, syntax trees, parse frames and branch variants — below ingest and retrieval."""
