"""clonebench: a voice-cloning evaluation harness.

Pipeline folders: ``data`` (pairs and manifests) -> ``adversary`` (the cloning
server protocols) -> ``generate`` (journaled, resumable generation) ->
``evaluate`` (scorers) -> ``report``.
"""

__version__ = "0.1.0"
