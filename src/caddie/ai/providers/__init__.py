"""Provider implementations, one module per API; each exposes ``PROVIDER`` (an ``ApiProvider``)."""
