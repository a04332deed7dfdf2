"""File checkpoints: snapshots of a workspace's files in a shadow git repository, and restoring them.

``shadow`` keeps the repository (under the agent dir, keyed by the workspace; never the project's own
``.git``), ``records`` reads the ``checkpoint`` entries a session holds, ``restore`` puts files back.
docs/checkpoints.md describes the design.
"""
