"""Teaching the course live, and reading it without running it.

In a workshop, one Kafka broker serves the room (shared-broker mode: DELIVERYLAB_BROKER or a
workshop.ini, see config.py). Each learner still has topics, tables and checkpoints of their
own (the learner id prefixes them all), and their results reach a class board.

    events    what a learner's kernel sends to her board topic (progress snapshots, checks,
              verdicts, hello), in the background, with short timeouts; nothing outside shared mode
    feed      reading the board topics from their beginning (late joiners, restarts)
    eventcheck  every event checked: sender and time from Kafka, fields typed, text shown as text
    presence  hello at setup, and a warning when another machine uses the same learner id
    board     ``python -m deliverylab board``: the instructor's live table, learner by module
    join      ``python -m deliverylab workshop join ADDRESS --learner ID`` (writes workshop.ini), leave, status
    button    the "Reset lesson" button under a notebook's setup cell (``lesson.reset()``)
    site      ``make site``: every lesson, executed, as HTML pages with charts and prev/next links
    roomload  ``python -m deliverylab.workshop.roomload``: a full room measured on a class broker (not in make test)
    roomfigures  its figures and report lines (percentiles, the broker's CPU and memory, the verdict)

Who calls in: progress.py (after recording), checks/ (a check's result), ledger.py (a verdict),
lesson.py (presence at setup), deliverylab.setup (the button), __main__ (board, workshop, site).
"""
