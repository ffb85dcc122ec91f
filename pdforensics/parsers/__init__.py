"""Text -> frozen dataclasses. Pure functions of a string; no registry logic here."""
