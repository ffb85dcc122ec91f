"""Secrets hidden before the first write: allowlists, detectors, entropy."""
