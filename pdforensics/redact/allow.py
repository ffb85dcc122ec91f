"""Which env var and flag values a bundle may show as they are: an allowlist.

Kept: SGLang's own flags and env vars (from the shipped catalog, and the `SGLANG_`/`SGL_`
families, so a variable newer than the catalog such as `SGLANG_SM120_MMA_TARGET_CTAS` stays
readable), the NCCL/CUDA/Torch/Mooncake/NVSHMEM/UCX/Gloo families, PATH-like variables, a
few harmless process settings, and whatever the operator adds with `--keep-env NAME`.
Never kept, whatever the list says: names with TOKEN, KEY, SECRET, PASSWORD, PASSWD,
CREDENTIAL, AUTH, COOKIE, SESSION or PRIVATE as a word (`--api-key`, `HF_TOKEN`,
`NCCL_IB_PKEY`...). Every other value becomes a keyed-hash marker (redact.Redactor.marker).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pdforensics import linear
from pdforensics.errors import ConfigError
from pdforensics.redact.detectors import is_secret_name

FAMILIES = ("SGLANG_", "SGL_", "NCCL_", "CUDA_", "TORCH_", "PYTORCH_", "MOONCAKE_", "NVSHMEM_", "UCX_",
            "GLOO_", "NVIDIA_", "CUBLAS_", "CUDNN_", "TORCHINDUCTOR_", "TRITON_", "OMP_", "MKL_", "NV_")
PATH_LIKE = frozenset({
    "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "LIBRARY_PATH", "CPATH", "MANPATH", "PKG_CONFIG_PATH",
    "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONHOME", "HF_HOME", "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE", "XDG_CACHE_HOME", "TMPDIR", "PWD", "HOME", "SHELL",
})
PROCESS = frozenset({
    "LANG", "LC_ALL", "TZ", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
    "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_ENABLE_HF_TRANSFER",
    "TOKENIZERS_PARALLELISM", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
    "INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "USER", "LOGNAME", "HOSTNAME",
    "SLURM_JOB_ID", "SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NNODES", "SLURM_JOB_NODELIST",
    "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "POD_NAME", "POD_NAMESPACE", "NODE_NAME",
})
# flags of the router/gateway and of the interpreter that are no secrets (the catalog has the server's)
EXTRA_FLAGS = frozenset({
    "-m", "--pd-disaggregation", "--prefill", "--decode", "--worker-urls", "--policy", "--prefill-policy",
    "--decode-policy", "--prometheus-host", "--prometheus-port", "--request-timeout-secs",
    "--max-concurrent-requests", "--health-check-interval-secs", "--health-failure-threshold",
    "--health-success-threshold", "--health-check-timeout-secs", "--health-check-endpoint",
    "--cb-failure-threshold", "--cb-success-threshold", "--cb-timeout-duration-secs", "--log-level",
    "--log-dir", "--host", "--port", "--model-path", "--service-discovery", "--mini-lb",
})
# a name holding any of these words is never kept, whatever an allowlist says
_NEVER = linear.compile(r"(?:^|[_\-])[A-Z]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:$|[_\-])|"
                    r"SECRET|PASSWORD|PASSWD|CREDENTIAL", linear.I)


def never_kept(name: str) -> bool:
    """A name that may hold a credential: its value is hashed whatever the allowlist says."""
    return is_secret_name(name) or _NEVER.search(name.lstrip("-")) is not None


@lru_cache(maxsize=1)
def _catalog_names() -> tuple[frozenset[str], frozenset[str]]:
    """(flags, env vars) of the shipped SGLang catalog; empty when it cannot be read."""
    from pdforensics.catalog import load_shipped_catalog
    from pdforensics.errors import PdforensicsError

    try:
        cat = load_shipped_catalog()
    except PdforensicsError:
        return frozenset(), frozenset()
    flags = {f.name for f in cat.flags.values()} | {a for f in cat.flags.values() for a in f.aliases}
    # only sglang's declared env vars: the ad hoc reads include other tools' (AWS_ENDPOINT_URL...)
    declared = [e for e in cat.env_vars.values() if e.declared]
    envs = {e.name for e in declared} | {a for e in declared for a in e.aliases}
    return frozenset(flags), frozenset(envs)


@dataclass(frozen=True)
class Allowlist:
    """What a capture keeps readable; `extra` is the operator's `--keep-env` names."""

    extra: frozenset[str] = frozenset()

    @classmethod
    def with_extra(cls, names: Iterable[str]) -> Allowlist:
        """The default list plus `names`; a credential-looking name is a usage error."""
        names = tuple(n.strip() for n in names if n.strip())
        refused = [n for n in names if never_kept(n)]
        if refused:
            raise ConfigError(f"--keep-env {refused[0]}: a name that may hold a credential is never kept "
                             "(its value is hashed; diff still sees it change)")
        return cls(frozenset(names))

    def keeps_env(self, name: str) -> bool:
        if never_kept(name):
            return False
        return (name in self.extra or name in PATH_LIKE or name in PROCESS or name.startswith(FAMILIES)
                or name in _catalog_names()[1])

    def keeps_flag(self, flag: str) -> bool:
        if never_kept(flag):
            return False
        if flag in self.extra or flag in EXTRA_FLAGS:
            return True
        known = _catalog_names()[0]
        return flag in known or flag.replace("_", "-") in known

    def describe(self) -> dict[str, object]:
        """What the manifest records about the allowlist."""
        return {"policy": "allowlist", "keep_env": sorted(self.extra),
                "families": list(FAMILIES[:10])}


DEFAULT = Allowlist()
