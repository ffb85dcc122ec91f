"""Catalog dataclasses: flags, env vars and metric names of one sglang release."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pdforensics.catalog.aliases import canonical_metric, metric_family
from pdforensics.errors import PdforensicsError

MetricType = Literal["gauge", "counter", "histogram", "summary", "unknown"]
JSONValue = Any  # None | bool | int | float | str | list | dict, as json gives it

SCHEMA = 1


@dataclass(frozen=True)
class FlagInfo:
    """One `sglang serve` command-line flag.

    `default` is the literal default (None when unknown or not a literal; then
    `default_expr` holds the source text). `type` is the argparse type as text.
    """

    name: str
    type: str | None = None
    default: JSONValue = None
    default_expr: str | None = None
    help: str | None = None
    choices: tuple[JSONValue, ...] | None = None
    choices_expr: str | None = None
    action: str | None = None
    dest: str | None = None
    nargs: str | None = None
    aliases: tuple[str, ...] = ()
    required: bool = False
    origin: str | None = None  # "path.py:line" it was read from


@dataclass(frozen=True)
class EnvInfo:
    """One environment variable sglang reads: declared in `srt/environ.py`, or read ad hoc
    (`os.getenv`, `os.environ`, `get_*_env_var`) anywhere in the package.

    `default` is the literal default (None when unset means None, or when not a literal:
    then `default_expr` holds the source text, or "varies: ..." when readers disagree).
    `read_by` lists the modules that read it.
    """

    name: str
    type: str | None = None
    default: JSONValue = None
    default_expr: str | None = None
    help: str | None = None
    aliases: tuple[str, ...] = ()  # deprecated names still read
    origin: str | None = None
    read_by: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        """Declared in `srt/environ.py` (not only read ad hoc somewhere)."""
        return (self.origin or "").startswith("srt/environ.py:")


@dataclass(frozen=True)
class MetricInfo:
    """One Prometheus metric family, keyed by the name /metrics exposes."""

    name: str  # exposed family name, e.g. "sglang:generation_tokens_total"
    declared: str  # the name passed to the prometheus_client constructor
    type: MetricType
    help: str | None = None
    labels: tuple[str, ...] = ()  # literal label names
    labels_expr: str | None = None  # source text of label names known only at runtime
    samples: tuple[str, ...] = ()  # sample names a scrape shows for this family
    origin: str | None = None


def _flag_key(name: str) -> str:
    """`--x`, `--x=1`, `x`, `x_y` -> `--x` / `--x-y`."""
    key = name.strip().split("=", 1)[0]
    if not key.startswith("-"):
        key = "--" + key.replace("_", "-")
    return key


@dataclass(frozen=True)
class Catalog:
    """Everything pdforensics knows about one sglang release."""

    version: str
    source: str  # what it was built from, e.g. "sglang-0.5.23-...whl sha256:..."
    flags: dict[str, FlagInfo] = field(default_factory=dict)
    env_vars: dict[str, EnvInfo] = field(default_factory=dict)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    _flag_index: dict[str, str] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    _env_index: dict[str, str] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        for key, info in self.flags.items():
            self._flag_index[key] = key
            if info.dest:
                self._flag_index.setdefault(_flag_key(info.dest), key)
        for key, info in self.flags.items():
            for alias in info.aliases:
                self._flag_index.setdefault(alias, key)
        for key, env in self.env_vars.items():
            self._env_index[key] = key
            for alias in env.aliases:
                self._env_index.setdefault(alias, key)

    # --- lookups -------------------------------------------------------
    def flag(self, name: str) -> FlagInfo | None:
        """The flag for `--x`, `--x=1`, `x` or `x_y` (aliases and dests too), or None."""
        key = self._flag_index.get(_flag_key(name))
        return self.flags[key] if key is not None else None

    def knows_flag(self, name: str) -> bool:
        return self.flag(name) is not None

    def env(self, name: str) -> EnvInfo | None:
        """The env var `name` (or a deprecated alias of one), or None."""
        key = self._env_index.get(name.strip().split("=", 1)[0])
        return self.env_vars[key] if key is not None else None

    def metric(self, name: str) -> MetricInfo | None:
        """The family for a family or sample name, through the alias table, or None."""
        for candidate in (name, canonical_metric(name)):
            if candidate in self.metrics:
                return self.metrics[candidate]
            family = metric_family(candidate, self.metrics)
            if family is not None:
                return self.metrics[family]
        return None

    def knows_metric(self, name: str) -> bool:
        return self.metric(name) is not None

    # --- JSON ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "version": self.version,
            "source": self.source,
            "flags": {k: asdict(v) for k, v in sorted(self.flags.items())},
            "env_vars": {k: asdict(v) for k, v in sorted(self.env_vars.items())},
            "metrics": {k: asdict(v) for k, v in sorted(self.metrics.items())},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Catalog:
        try:
            flags = {k: _flag_from(v) for k, v in data["flags"].items()}
            envs = {k: _env_from(v) for k, v in data["env_vars"].items()}
            metrics = {k: _metric_from(v) for k, v in data["metrics"].items()}
            return cls(str(data["version"]), str(data["source"]), flags, envs, metrics)
        except (KeyError, TypeError, AttributeError) as exc:
            raise PdforensicsError(f"not a pdforensics catalog: missing or bad {exc}") from exc

    @classmethod
    def from_json(cls, text: str) -> Catalog:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise PdforensicsError(f"catalog is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise PdforensicsError("not a pdforensics catalog: top level is not an object")
        return cls.from_dict(data)


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _flag_from(d: dict[str, Any]) -> FlagInfo:
    d = dict(d)
    d["choices"] = _tuple_or_none(d.get("choices"))
    d["aliases"] = tuple(d.get("aliases", ()))
    return FlagInfo(**d)


def _env_from(d: dict[str, Any]) -> EnvInfo:
    d = dict(d)
    d["aliases"] = tuple(d.get("aliases", ()))
    d["read_by"] = tuple(d.get("read_by", ()))
    return EnvInfo(**d)


def _metric_from(d: dict[str, Any]) -> MetricInfo:
    d = dict(d)
    d["labels"] = tuple(d.get("labels", ()))
    d["samples"] = tuple(d.get("samples", ()))
    return MetricInfo(**d)
