"""`python -m specprobe` runs the command line."""

from specprobe.cli import main

main()
