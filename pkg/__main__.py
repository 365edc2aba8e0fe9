"""`python -m pkg` runs the CLI."""

from pkg.cli import main

main()
