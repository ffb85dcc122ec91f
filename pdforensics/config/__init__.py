"""The cluster file: hosts, services and their checks, and known_hosts."""
