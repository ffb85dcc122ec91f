"""The workflows the commands call: a capture finished into analysis, report and store; a snapshot."""
