"""Skills, prompt templates and packages: what a user brings from Pi, Claude Code or Codex.

Pure discovery and formatting over files on disk (plus ``uv`` for packages); the runtime wires the results
into the system prompt, the prompt path (``/skill:name``, ``/template``) and the extension loader.
"""
