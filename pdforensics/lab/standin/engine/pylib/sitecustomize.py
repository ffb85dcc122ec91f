"""pdforensics engine lab: make SGLang 0.5.23 usable as a PD pair on a CPU host.

Two attribute changes, each made right after SGLang's own module is imported, in every
process that has this folder on PYTHONPATH (the spawned scheduler ranks inherit it).
Nothing on disk is changed; processes that never import these modules are untouched.

1. `MooncakeKVSender.supports_host_tensor_indices` is hard-coded True in 0.5.23, which
   sends the prefill side down a pinned-memory / CUDA-event path ("Found no NVIDIA
   driver"): set it False.
2. With --tp-size > 1 on the in-tree CPU platform, `init_model_parallel_group` creates a
   PyNccl communicator ("ValueError: Expected a cuda device, but got: cpu"): default its
   `use_pynccl` to False on a CPU-only host, so the groups use gloo only.
"""

import functools
import importlib.abc
import importlib.util
import os
import sys


def _patch_mooncake(module):
    sender = getattr(module, "MooncakeKVSender", None)
    if sender is not None:
        sender.supports_host_tensor_indices = False


def _patch_parallel_state(module):
    original = getattr(module, "init_model_parallel_group", None)
    if original is None or os.environ.get("SGLANG_USE_CPU_ENGINE") != "1":
        return

    @functools.wraps(original)
    def init_model_parallel_group(*args, **kwargs):
        if len(args) < 4 and kwargs.get("use_pynccl") is None:  # 4th parameter: use_pynccl
            kwargs["use_pynccl"] = False
        return original(*args, **kwargs)

    module.init_model_parallel_group = init_model_parallel_group


_PATCHES = {
    "sglang.srt.disaggregation.mooncake.conn": _patch_mooncake,
    "sglang.srt.distributed.parallel_state": _patch_parallel_state,
}


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _PATCHES[module.__name__](module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in _PATCHES:
            return None
        sys.meta_path.remove(self)  # find the real spec without recursing into ourselves
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


for _name, _fn in _PATCHES.items():
    if _name in sys.modules:
        _fn(sys.modules[_name])
sys.meta_path.insert(0, _Finder())
