"""What `capture --k8s` (or a cluster file's [k8s] table) asks for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdforensics.config.check import check_keys
from pdforensics.errors import ConfigError
from pdforensics.parsers.k8s_labels import BUILTIN_SELECTORS

K8S_KEYS = frozenset({"namespace", "selector", "context", "debug", "debug_image"})
#: py-spy's own image is not published; a python image with py-spy is the operator's to name
DEFAULT_DEBUG_IMAGE = "python:3.12-slim"


@dataclass(frozen=True)
class K8sSettings:
    namespace: str | None = None  # None: the kubeconfig context's namespace
    selector: str | None = None  # a label selector or a preset (lws, rbg, ome, gateway-pd)
    context: str | None = None
    debug: bool = False  # add an ephemeral debug container for py-spy (changes the pod)
    debug_image: str = DEFAULT_DEBUG_IMAGE

    @property
    def label_selector(self) -> str | None:
        """The selector kubectl gets: a preset name stands for its label."""
        if self.selector is None:
            return None
        return BUILTIN_SELECTORS.get(self.selector, self.selector)


def settings_from_table(raw: Any, origin: str) -> K8sSettings:
    """A cluster file's [k8s] table (every key optional)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: [k8s] must be a table")
    check_keys(raw, K8S_KEYS, f"{origin}: [k8s]")
    for key in ("namespace", "selector", "context", "debug_image"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{origin}: [k8s].{key} must be a string, not {raw[key]!r}")
    if "debug" in raw and not isinstance(raw["debug"], bool):
        raise ConfigError(f"{origin}: [k8s].debug must be true or false, not {raw['debug']!r}")
    return K8sSettings(namespace=raw.get("namespace"), selector=raw.get("selector"),
                       context=raw.get("context"), debug=bool(raw.get("debug", False)),
                       debug_image=raw.get("debug_image", DEFAULT_DEBUG_IMAGE))


def merged(base: K8sSettings | None, namespace: str | None, selector: str | None,
           context: str | None, debug: bool, debug_image: str | None) -> K8sSettings:
    """Command-line options over the cluster file's [k8s] table."""
    b = base or K8sSettings()
    return K8sSettings(namespace=namespace or b.namespace, selector=selector or b.selector,
                       context=context or b.context, debug=debug or b.debug,
                       debug_image=debug_image or b.debug_image)
