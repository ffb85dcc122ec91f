"""Stand-in `sglang` package of the pdforensics lab (no GPU, no model; same shape)."""

__version__ = "0.5.23"
