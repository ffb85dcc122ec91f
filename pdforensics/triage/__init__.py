"""`pdforensics triage`: loose files (stacks, goroutines, /metrics, logs, /server_info) -> a
verdict. Import from the submodules (read, view, run, client, score); this package's
__init__ stays empty so that the analysis engine can import triage.client lazily."""
