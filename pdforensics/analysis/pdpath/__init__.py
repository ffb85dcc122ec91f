"""The PD request path model (model.py), its readers (sources.py, read_*.py) and the one
reasoning pass (reason.py) that turns their clues into a Diagnosis."""
