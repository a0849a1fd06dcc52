"""python -m pgcc: the pgcc-export command (cli.py)."""
import sys

from .cli import main

__all__ = []

sys.exit(main())
