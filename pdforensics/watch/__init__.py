"""Watch mode: poll cheap signals, capture a wedge while it happens, talk Prometheus.

poll (one GET per endpoint) -> signature (the analysis rules over the last two polls)
-> incident (held for --for, one capture per incident) -> capture + hook; exporter exposes
what the watcher sees; history pulls Prometheus series into a bundle.
"""
