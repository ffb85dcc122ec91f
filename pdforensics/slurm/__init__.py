"""Slurm: read a job (`scontrol show job -d`, `scontrol show step`), expand its node lists,
and turn it into the hosts a capture reaches through `srun --overlap`."""
