"""A bundle read back into typed views: hosts, services, processes (parsed/ or raw/)."""
