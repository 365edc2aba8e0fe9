"""Source ingestion: parsing code into functions and blocks."""
