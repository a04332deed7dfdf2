"""Extensions: the public API (``caddie.extensions.api``), the runner that dispatches events, the loader."""
