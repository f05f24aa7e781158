"""Module 01, three guarantees with a plain consumer.

    consumers   the code the lesson shows: four consumer variants in ONE table, the crash hook
    process     the consumer process: its poll loop and command line
    harness     the notebook side: runs a variant in a process, crashes it, reconciles the sink
    pitfalls    in the kernel: automatic commits inside poll(), and two copies of offsets_with_data
    lab         the lab's checks, one function per exercise

    from deliverylab.modules import m01
    report = m01.crash_and_recover("write_then_commit", lesson)
"""
from . import pitfalls
from .consumers import CRASH_MOMENTS, VARIANTS, check_moment, check_variant, expected_outcome, source
from .harness import (ConsumerProcess, CrashReport, RunResult, crash_and_recover, db_path, delivered, group_id,
                      reset_variant, resume_offsets, run_consumer, start_consumer)

__all__ = ["CRASH_MOMENTS", "VARIANTS", "ConsumerProcess", "CrashReport", "RunResult", "check_moment",
           "check_variant", "crash_and_recover", "db_path", "delivered", "expected_outcome", "group_id",
           "pitfalls", "reset_variant", "resume_offsets", "run_consumer", "source", "start_consumer"]
