"""Stand-in for the CPU build of sgl_kernel (not on PyPI), for running SGLang on a CPU host.

SGLang's CPU mode imports a few ops from `sgl_kernel`. On the tiny model the run uses only
one, `copy_all_layer_kv_cache_cpu` (moves KV rows between slots of every layer's buffer);
it is written here in plain torch. Any other name imports fine but raises when called, so a
code path we did not expect fails loudly instead of computing something wrong.
"""

import ctypes

import torch

__version__ = "0.0.0+pdforensics.standin"


def copy_all_layer_kv_cache_cpu(data_ptrs, strides, tgt_loc, src_loc):
    """For every KV buffer (base address data_ptrs[i], row size strides[i] bytes), copy
    row src_loc[j] to row tgt_loc[j]."""
    if tgt_loc.numel() == 0:
        return
    src = src_loc.to(torch.long).cpu()
    tgt = tgt_loc.to(torch.long).cpu()
    rows = int(max(src.max().item(), tgt.max().item())) + 1
    for ptr, stride in zip(data_ptrs.tolist(), strides.tolist(), strict=True):
        raw = (ctypes.c_uint8 * (rows * int(stride))).from_address(int(ptr))
        buf = torch.frombuffer(raw, dtype=torch.uint8).view(rows, int(stride))
        buf[tgt] = buf[src].clone()


class _Missing:
    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{self.__name__} is not provided by the pdforensics CPU stand-in"
        )


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)
