"""Each course module's own helpers, one folder per module that has some (``m01`` = module 01)."""
