"""`python -m pdforensics.cli`: the same as the `pdforensics` command."""

from pdforensics.cli import main

main()
