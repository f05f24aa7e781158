"""The room load test's figures and report (workshop/roomload.py), without a broker. The load test itself runs
with `python -m deliverylab.workshop.roomload` (not in make test): the guide has its figures."""
from __future__ import annotations

from collections import Counter

from deliverylab.workshop import roomload


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert roomload.percentile(values, 50) == 50 and roomload.percentile(values, 99) == 99
    assert roomload.percentile(values, 100) == 100 and roomload.percentile([7.0], 99) == 7.0
    assert roomload.percentile([], 99) == 0.0
    assert roomload.percentile([3, 1, 2], 50) == 2


def test_broker_cpu_and_memory_from_proc():
    stat = "4242 (java main) S 1 4242 4242 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 80 0 123 4000000 50000"
    assert roomload.proc_cpu_ticks(stat) == 1750  # utime + stime, a command name with a space
    assert roomload.proc_rss_kb("Name:\tjava\nVmRSS:\t  612340 kB\nThreads:\t80\n") == 612340
    assert roomload.proc_rss_kb("Name:\tzombie\n") == 0
    assert roomload.cpu_percent(1000, 1150, 1.0, hz=100) == 150.0  # 1.5 cores busy
    assert roomload.cpu_percent(0, 10, 0.0) == 0.0


def test_throttle_time_from_a_clients_metrics():
    metrics = {"producer-metrics": {"throttle-time-max": float("nan"), "record-send-rate": 5.0},
               "producer-node-metrics.node-1": {"throttle-time-max": 812.0}}
    assert roomload.throttle_ms(metrics) == 812.0
    assert roomload.throttle_ms({"producer-metrics": {"throttle-time-max": float("nan")}}) == 0.0


def test_the_verdict_compares_the_others_p99_with_the_calm_runs():
    assert roomload.verdict(100, 150).endswith("1.50x the calm run's (limit 2x): PASS")
    assert roomload.verdict(100, 250).endswith("FAIL")
    assert "no calm run" in roomload.verdict(0, 10)


def test_the_report_has_a_line_per_run_the_runaway_and_the_verdict():
    calm, loud = roomload.Run("calm", 60), roomload.Run("runaway", 60)
    calm.merge({"latencies_ms": [50.0] * 98 + [120.0] * 2, "errors": {}, "cycles": 40, "relayed": 4000, "read": 9000,
                "throttled_ms": 0.0})
    loud.merge({"latencies_ms": [55.0] * 98 + [180.0] * 2, "errors": Counter({"read: KafkaTimeoutError": 2}),
                "cycles": 38, "relayed": 3800, "read": 8000, "throttled_ms": 0.0})
    calm.cpu, calm.rss_kb, calm.board_ms = [40.0, 60.0], [600 * 1024], [12.0, 30.0]
    lines = roomload.report([calm, loud], 30, 60, "machine: 2 cores, 24 GB",
                            {"bytes": 70 << 20, "seconds": 60.0, "throttled_ms": 2400.0})
    assert lines[0] == ("room load: 30 learners, 60 s a run, one class broker on loopback with the learners' quotas; "
                        "machine: 2 cores, 24 GB")
    calm_line = next(l for l in lines if l.startswith("calm"))
    assert calm_line.split()[1:5] == ["100", "50", "120", "0"] and "600" in calm_line
    assert "read: KafkaTimeoutError x2" in lines[-3]
    assert lines[-2] == "runaway learner: 70.0 MiB acknowledged in 60 s = 1.17 MiB/s, throttled up to 2400 ms a response"
    assert lines[-1].endswith("1.50x the calm run's (limit 2x): PASS")


def test_runs_are_named_in_order_and_the_verdict_uses_every_calm_run():
    assert roomload.phases("calm,runaway,calm") == [("calm 1", False), ("runaway", True), ("calm 2", False)]
    assert roomload.phases("calm") == [("calm", False)]
    import pytest

    with pytest.raises(SystemExit, match="--runs takes calm and runaway"):
        roomload.phases("calm,flood")
    runs = [roomload.Run(name, 60) for name in ("calm 1", "runaway", "calm 2")]
    for run, p99 in zip(runs, (100.0, 240.0, 140.0)):
        run.latencies_ms = [10.0] * 98 + [p99] * 2
    assert roomload.report(runs, 30, 60, "m", None)[-1].endswith("2.00x the calm run's (limit 2x): PASS")
