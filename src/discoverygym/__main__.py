"""`python -m discoverygym`: the same command as `discoverygym`."""

from .cli import main

main()
