"""Module 08, the capstone: the guarantee matrix and the price of exactly-once, measured.

    chaos_run the capstone's chaos plan (every named crash point, then random kills) and its checked line
    matrix    every crash-lab variant through the same chaos plan: observed lost / duplicated,
              next to what the course expects and what the learner predicted (a table and a chart)
    price     throughput and median batch latency of each variant, from the matrix's own run
    audit     Delta's history() as the audit trail: one STREAMING UPDATE version per batch, and how far back
              it reaches (delta.logRetentionDuration) and which LogStore S3 would get
    lab       the lab's checks
    hidden_runs  the lab's hidden runs: another pipeline's crash points, a kill right after the sink's commit,
              another table's history, the variants drawn for the kernel
"""
from . import audit, chaos_run, matrix, price

__all__ = ["audit", "chaos_run", "matrix", "price"]
