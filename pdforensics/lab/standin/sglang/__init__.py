"""Stand-in `sglang` package of the pdforensics lab (no GPU, no model; same shape)."""

import os

from sglang.version import __version__ as _released

# a lab role may pose as another release (lab_up extra_env; doctor's version-mismatch test)
__version__ = os.environ.get("PDFX_LAB_SGLANG_VERSION", _released)
