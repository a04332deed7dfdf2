"""Sessions: the JSONL tree store in Pi's v3 format, context building, compaction logic."""
