"""Each course module's own helpers, one folder per module that has some (``m01`` = module 01).

``m10`` (Iceberg) runs on the Iceberg kernel, "Python 3 (Spark 4.1 + Iceberg)"; its ``tables`` also imports in the
main venv (pyiceberg, for rows, is imported on first use).
"""
