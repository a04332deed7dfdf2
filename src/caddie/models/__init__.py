"""Model policy above the ``caddie.ai`` library: models.json, keys (auth.json, environment, ``!command``),
the local Ollama probe, and which model to use when none is named.

``caddie.ai`` holds the catalogue and the types; this package decides.
"""

from caddie.models.auth import AuthStore, Credential, InMemoryCredentialStore
from caddie.models.config_value import resolve_config_value
from caddie.models.ollama import probe_ollama
from caddie.models.registry import DEFAULT_MODELS, ModelNotFound, ModelRegistry, NoModelConfigured

__all__ = [
    "DEFAULT_MODELS",
    "AuthStore",
    "Credential",
    "InMemoryCredentialStore",
    "ModelNotFound",
    "ModelRegistry",
    "NoModelConfigured",
    "probe_ollama",
    "resolve_config_value",
]
