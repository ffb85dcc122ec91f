"""Every reader module, imported once so its `@reader` functions register (explicit list:
add one import per module)."""

from pdforensics.analysis.pdpath import read_sglang  # noqa: F401
