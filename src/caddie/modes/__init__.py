"""Views of the event stream: interactive TUI, print, JSON, RPC, and offline inspection."""
