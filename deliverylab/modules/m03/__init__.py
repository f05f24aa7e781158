"""Module 03, at-most-once.

    queries   checkpoint_folder(query): the folder a running query keeps its checkpoint in (the
              temporary one Spark makes up when the query names none); subfolders(path), the
              checkpoints under a session-wide checkpoint location
    charts    missing_revenue_chart: revenue delivered and lost, per pipeline
    lab       the lab's checks, one function per exercise, their hidden runs, and the restart experiment
    race      Racing: the pipeline as lab 03's exercise 1 cell hands it to the learner's function, with the race
              between producing and the driver reading forced both ways (part read at once, part held back)

    from deliverylab.modules import m03
    m03.missing_revenue_chart({"at_most_once": pipe.ledger()})
"""
from .charts import missing_revenue_chart
from .queries import checkpoint_folder, subfolders

__all__ = ["checkpoint_folder", "missing_revenue_chart", "subfolders"]
