"""Taking a capture: plan the jobs, run each host within the deadline, write the bundle."""
