"""`python -m pdforensics`: the same as the `pdforensics` command."""

from pdforensics.cli import main

main()
