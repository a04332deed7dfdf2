"""The running session: wires the agent loop, the session store, extensions, settings and compaction."""
