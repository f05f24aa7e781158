"""``python -m deliverylab <command>``: the course's command line.

    setup [--jars-only]         resolve the JVM jars once (needs network once), record the class archive
    setup --iceberg-python PY   ... and make module 10's kernel (PY: its venv's Python) known to JupyterLab
    pip install ...             pip, saying at least every 10 s what it is doing (make setup's installs)
    stack up|down|status|reset|wipe
    stack up --class class.txt --address A    the class broker: a login per learner, prefixed ACLs (stack/classbroker.py)
    doctor                      check Java, memory, ports, jars, both kernels and the broker
    jupyter lab|stop            JupyterLab on lesson 00 (127.0.0.1, token on)
    mywork                      bring course updates into your copies of the notebooks (my-work/)
    labs build|check            generate labs from solutions / verify they are in sync
    progress                    modules done, checks passed, quiz scores
    notebooks execute NB...     run a notebook, keep only the outputs nbval compares
    chaos --pipeline NAME ...   crash a pipeline repeatedly and print the ledger as JSON
    board [--module NN] ...     the class board: every learner's progress on the shared broker
    workshop join|leave|status  use an instructor's broker (writes workshop.ini), or stop using it
    site [--no-execute]         every lesson, executed, as HTML in .state/site/ (make site)
    cluster up|down|status      a local Spark standalone cluster (master + 2 workers), see stack/cluster.py
"""
from __future__ import annotations

import argparse
import sys

from .config import CourseError


def _kafka_cluster(args) -> int:
    """`stack up|wipe --brokers 3`, `stack kill-broker N`, `stack restart-broker N` (stack/brokers.py)."""
    from .stack import brokers

    if args.brokers not in (None, 1, brokers.NODES):
        raise CourseError(f"--brokers takes 1 (the course's broker) or {brokers.NODES} (a three-broker cluster).")
    if args.action in ("kill-broker", "restart-broker") and args.node is None:
        raise CourseError(f"`stack {args.action}` needs the broker's number, 1 to {brokers.NODES}.")
    if args.action == "up":
        print(brokers.up().line())
        print(f"to run the course on it: export DELIVERYLAB_BROKER={brokers.bootstrap()}")
    elif args.action == "wipe":
        brokers.wipe()
    elif args.action == "kill-broker":
        brokers.kill_broker(args.node)
    elif args.action == "restart-broker":
        print(brokers.restart_broker(args.node).line())
    else:
        raise CourseError(f"`stack {args.action}` does not take --brokers; it acts on every broker of the course.")
    return 0


def _class_broker(args) -> int:
    """`stack up --class class.txt --address A`, `stack down|status|wipe --class` (stack/classbroker.py)."""
    from .config import HOST, settings
    from .stack import classbroker

    if args.action == "up":
        if not args.class_roster:
            raise CourseError("`stack up --class` needs the roster: `stack up --class class.txt --address YOUR-ADDRESS`.")
        st = classbroker.up(args.class_roster, args.address or HOST, docker=args.docker)
        print(st.line())
        print(f"hand each learner their line of {classbroker.paths(settings())['tokens']}; they run "
              "`python -m deliverylab workshop join <token>`")
    elif args.action == "down":
        print("class broker: stopped" if classbroker.down() else "class broker: not running")
    elif args.action == "status":
        st = classbroker.status()
        print(st.line())
        return 0 if st.pid else 1
    elif args.action == "wipe":
        classbroker.wipe()
    else:
        raise CourseError(f"`stack {args.action}` does not take --class; the class broker knows up, down, status, wipe.")
    return 0


def _stack(args) -> int:
    from . import lesson
    from .config import settings
    from .stack import broker, processes

    if args.action in ("kill-broker", "restart-broker") or args.brokers not in (None, 1):
        return _kafka_cluster(args)
    if args.class_roster is not None:
        return _class_broker(args)
    if args.action == "up":
        print(broker.up().line())
    elif args.action == "down":
        left = processes.stop_course_processes(settings().state)
        if left:
            print(f"stopped {left} crash-lab driver or consumer process(es) left running")
        from .stack import cluster

        if cluster.down(log=lambda msg: None):  # the Spark cluster of `cluster up`, if it runs
            print("spark cluster: stopped")
        from .stack import brokers

        if brokers.down(log=lambda msg: None):  # the three-broker cluster of `stack up --brokers 3`
            print("kafka cluster: stopped")
        if settings().shared:
            broker.down()  # says that a shared broker is left alone
        elif not broker.down():
            print("broker: not running")
        else:
            print("broker: stopped")
    elif args.action == "status":
        st = broker.status()
        print(st.line())
        from .stack import brokers

        if brokers.status().running:  # the three-broker cluster, when it runs
            print(brokers.status().line())
        from . import running

        print("\n".join(running.report()))  # every course process, by notebook kernel, with its memory
        return 0 if st.running and st.answering else 1
    elif args.action == "reset":
        lesson.reset(all_learners=args.all_learners, learner=args.learner)
    elif args.action == "wipe":
        broker.wipe()
    return 0


def _mywork(args) -> int:
    from .stack import workcopy

    done = workcopy.refresh()
    if not any(done.values()):
        print(f"your copies in {workcopy.WORK_DIR}/ are up to date")
    return 0


def _setup(args) -> int:
    from .stack import classarchive, jars, kernels

    jars.ensure_all()  # this Python's own: the main venv's Spark and broker jars, or module 10's Spark 4.1 jars
    if not args.jars_only:  # the Makefile resolves the jars while pip installs, then records the archive
        classarchive.build()
    if args.iceberg_python:  # module 10's kernel, into this (the main) venv's Jupyter
        return 0 if kernels.install_kernelspec(args.iceberg_python) else 1
    return 0


#: What `make setup`'s pip runs install (three per venv), and how long each usually takes (said before it starts).
PIP_RUNS = (
    ("pyspark==", "installing {spec} (one 450 MB package: Spark's jars inside)",
     "usually 2-5 minutes: the download, then pip packs and unpacks it"),
    ("requirements-iceberg.txt", "installing module 10's other Python packages (pyiceberg, pyarrow, Delta, the kernel ...)",
     "about 60 packages: usually 1-3 minutes"),
    ("requirements.txt", "installing the course's other Python packages (JupyterLab, Delta, Kafka, pytest ...)",
     "about 120 packages, 500 MB installed: usually 2-4 minutes"),
    ("-e", "installing the course's own package (deliverylab, editable)", "usually under 20 s"),
)


def _pip(args) -> int:
    """`python -m deliverylab pip install ...`: pip with a progress line at least every 10 s (stack/heartbeat.py)."""
    from .stack import heartbeat

    rest = list(args.rest)
    what, estimate = "running pip " + " ".join(rest), ""
    for needle, title, usual in PIP_RUNS:
        spec = next((a for a in rest if needle in a), None)
        if spec is not None:
            what, estimate = title.format(spec=spec.replace("==", " ")), usual
            break
    return heartbeat.pip(rest, what, estimate)


def _jupyter(args) -> int:
    from .stack import jupyter

    if args.action == "lab":
        return jupyter.lab(open_browser=not args.no_browser)
    n = jupyter.stop()
    print(f"jupyter: stopped {n} server(s)")
    return 0


def _doctor(args) -> int:
    from . import doctor

    return doctor.main()


def _labs(args) -> int:
    from . import labs

    return labs.main(args.rest)


def _progress(args) -> int:
    from . import progress

    return progress.main(args.rest)


def _notebooks(args) -> int:
    from .stack import runner

    return runner.main(args.rest)


def _chaos(args) -> int:
    from .crashlab import chaos

    return chaos.main(args.rest)


def _board(args) -> int:
    from .workshop import board

    return board.main(args.rest)


def _workshop(args) -> int:
    from .workshop import join

    return join.main(args.rest)


def _site(args) -> int:
    from .workshop import site

    return site.main(args.rest)


def _cluster(args) -> int:
    from .stack import cluster

    return cluster.main(args.rest)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m deliverylab", description="Exactly Once, For Real: course tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="resolve the JVM jars into .state/jars (needs network once), "
                                         "then record the class archive")
    setup.add_argument("--jars-only", action="store_true", help="only the jars (they need pyspark, nothing else)")
    setup.add_argument("--iceberg-python", metavar="PYTHON",
                       help="module 10's venv's Python: install its kernelspec (deliverylab-iceberg) into this venv")
    setup.set_defaults(fn=_setup)
    stack = sub.add_parser("stack", help="control the local Kafka broker")
    stack.add_argument("action", choices=["up", "down", "status", "reset", "wipe", "kill-broker", "restart-broker"])
    stack.add_argument("node", nargs="?", type=int, help="with kill-broker/restart-broker: the broker's number (1-3)")
    stack.add_argument("--brokers", type=int, help="with up/wipe: 3 for the three-broker Kafka cluster")
    stack.add_argument("--all-learners", action="store_true", help="with reset: every learner's course data")
    stack.add_argument("--learner", help="with reset: that learner's course data (refused on a shared broker)")
    stack.add_argument("--class", dest="class_roster", nargs="?", const="", metavar="ROSTER",
                       help="the class broker with logins: `up --class class.txt --address A`; down, status, wipe --class")
    stack.add_argument("--address", help="with up --class: this machine's address on the class network")
    stack.add_argument("--docker", action="store_true", help="with up --class: grant on docker/class-broker.yaml's broker")
    stack.set_defaults(fn=_stack)
    sub.add_parser("doctor", help="check the machine and the stack").set_defaults(fn=_doctor)
    sub.add_parser("mywork", help="bring course updates into your copies of the notebooks (my-work/)",
                   ).set_defaults(fn=_mywork)
    jup = sub.add_parser("jupyter", help="start JupyterLab on lesson 00 (127.0.0.1, token on), or stop it")
    jup.add_argument("action", choices=["lab", "stop"])
    jup.add_argument("--no-browser", action="store_true")
    jup.set_defaults(fn=_jupyter)
    for name, fn, help_text in (
        ("pip", _pip, "pip, saying at least every 10 s what it is doing (make setup)"),
        ("labs", _labs, "build labs from solutions, or check they are in sync"),
        ("progress", _progress, "show modules done"),
        ("notebooks", _notebooks, "execute a notebook and keep only its checked outputs"),
        ("chaos", _chaos, "crash a pipeline repeatedly and print its ledger as JSON"),
        ("board", _board, "the class board: every learner's progress on the shared broker"),
        ("workshop", _workshop, "use an instructor's broker (join, leave, status)"),
        ("site", _site, "render every lesson, executed, to HTML in .state/site/"),
        ("cluster", _cluster, "a local Spark standalone cluster: up, down, status, kill-worker N, restart-worker N"),
    ):
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(fn=fn)
    return parser


#: Commands whose own main() parses the rest of the line (argparse's REMAINDER would
#: refuse options such as `--pipeline` that come right after the command name).
PASS_THROUGH = {"pip": _pip, "labs": _labs, "progress": _progress, "notebooks": _notebooks, "chaos": _chaos,
                "board": _board, "workshop": _workshop, "site": _site, "cluster": _cluster}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in PASS_THROUGH:
        args = argparse.Namespace(rest=argv[1:], fn=PASS_THROUGH[argv[0]])
    else:
        args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except CourseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
