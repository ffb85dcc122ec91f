"""The on-disk bundle: the writer (atomic finalise), its schemas, verify and the secrets scan."""
