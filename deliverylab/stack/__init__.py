"""The machine the course runs on, and nothing of the course itself.

    java       finding a JDK 17+                  jars      JVM jars resolved once (ivy/)
    broker     the real Kafka broker (KRaft)      kafka     admin client, topics, offsets, groups
    session    the SparkSession of a process       processes child processes: spawn, watch, kill
    jupyter    JupyterLab for `make lab`          runner    execute a notebook, keep checked outputs
    kernels    the two Jupyter kernels: the main one, and module 10's (Spark 4.1 + Iceberg, .venv-iceberg)
    workcopy   the learner's own copies of the notebooks (my-work/), which course updates never collide with
    nbcapture  a pytest plugin keeping every notebook as nbval executed it, with its timings (nbtimings reads them)
    cputime    CPU seconds of a process tree, orphans included (the test run's phase table)
    flaky      a loopback proxy that loses produce replies: a real network fault for retries
    cluster    a local Spark standalone cluster (master + 2 workers): cluster up|down|status
    brokers    a three-broker Kafka cluster (KRaft, RF 3, min.insync.replicas=2): stack up --brokers 3
    locks      one holder at a time across processes (server up/down, the flaky proxy's port)
    heartbeat  a long setup step (pip, Ivy, the class archive) says what it does at least every 10 s
    idlesession   a lesson's kernel left idle stops its Spark session (its JVM exits); the next Spark cell starts one
    foreachbatch  a foreachBatch query stopped mid-batch ends quietly (Spark 4.2.0's regex overflow)
    classarchive  the class-data-sharing archive that shortens every Spark JVM's start (made by setup)
    classbroker   the class broker for a room: SASL/SCRAM logins, prefixed ACLs (stack up --class class.txt)
    classauth     its pure side: the roster, passwords (0600), join tokens, the ACL list, client and Spark login options
    classquota    the learners' quotas (produce and fetch byte rates, request share, partitions created a second)
    classlimits   the class broker's limits: its topic policy (classpolicy/, Java), connections, safe topic defaults
    classroster   the class broker made to match the roster: logins, ACLs, board topics (what changed, in a line)
    classprocess  the class broker's JVM: private files, a start and a stop that wait while it makes progress
    classrun      a command run as a learner who joined a class broker of its own (make test's lessons 01, 04, 06)
    loginhint     the line that tells a learner her own Kafka client left out the class broker's login
    loginprobe    one SASL exchange on a socket: does the broker accept this login? (kafka-python only times out)

Nothing here imports course code (lessons, the crash lab, the modules); only ``config``.
"""
