"""Stand-in `sglang_router` (sgl-model-gateway) of the pdforensics lab."""

__version__ = "0.3.2"
