"""Where caddie keeps its files, and the merged settings (global ``~/.caddie/agent`` ← project ``.caddie``)."""

from caddie.config.paths import agent_dir, project_dir, sessions_root
from caddie.config.settings import Settings, deep_merge, load_settings

__all__ = ["Settings", "agent_dir", "deep_merge", "load_settings", "project_dir", "sessions_root"]
