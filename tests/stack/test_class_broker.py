"""The class broker with logins and prefixed ACLs (stack/classbroker.py, stack/classauth.py), for real.

One class broker for the module (tests/stack/conftest.py's ``room``), from the course's jars, on ports of
its own (never the course broker's 9092-9095) and in a state folder of its own; real kafka-python clients
log in as two learners (ada and bob), the board, and with a wrong password. Every refusal must be Kafka's authorization error turned
into one CourseError line. The learners' quotas (stack/classquota.py): a runaway producer is held to its byte rate,
a lesson's burst is not throttled.
"""
from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import replace

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from deliverylab import config
from deliverylab.config import CLASS_TOPIC, CourseError, KafkaLogin
from deliverylab.stack import broker, classauth, classbroker, kafka

pytestmark = pytest.mark.stack
#: the settings the module's fixture changes, as the run had them
RUN_ENVIRONMENT = {name: os.environ.get(name) for name in ("DELIVERYLAB_STATE", "DELIVERYLAB_WORKSHOP_FILE",
                                                           "DELIVERYLAB_BROKER", "DELIVERYLAB_LEARNER")}


def produce(login: KafkaLogin, topic: str, values=(b"x",), **options) -> None:
    producer = KafkaProducer(bootstrap_servers=login.broker, max_block_ms=5000, **classauth.client_options(login), **options)
    try:
        if options.get("transactional_id"):
            producer.init_transactions()
            producer.begin_transaction()
        sent = [producer.send(topic, value) for value in values]
        if options.get("transactional_id"):
            producer.commit_transaction()
        for future in sent:
            future.get(timeout=10)  # a refused write fails here, as in a lesson's producer
    finally:
        producer.close(timeout=2)


def consume_in_group(login: KafkaLogin, topic: str, group: str, want: int) -> int:
    consumer = KafkaConsumer(topic, bootstrap_servers=login.broker, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, **classauth.client_options(login))
    try:
        seen, deadline = 0, time.monotonic() + 20
        while seen < want and time.monotonic() < deadline:
            seen += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
        consumer.commit()
        return seen
    finally:
        consumer.close(autocommit=False)


def refused(call, room, learner, action, resource) -> str:
    with pytest.raises(CourseError) as error:
        with kafka.refusals(room.bootstrap, action, resource, login=room.login(learner)):
            call()
    line = str(error.value)
    assert "\n" not in line and "Kafka refused" in line
    return line


def test_the_passwords_and_tokens_stay_with_the_instructor(room):
    files = classbroker.paths(config.settings())
    for name in ("passwords", "tokens", "props"):
        assert stat.S_IMODE(files[name].stat().st_mode) == 0o600, name
    tokens = dict(line.split("\t") for line in files["tokens"].read_text().splitlines() if not line.startswith("#"))
    assert set(tokens) == {"ada", "bob"}
    assert classauth.parse_join_token(tokens["ada"]) == room.login("ada")


def test_a_learner_does_everything_the_lessons_do_in_her_own_prefix(room, as_learner):
    ada, topic = room.login("ada"), "xo.ada.01-three-guarantees.orders"
    as_learner("ada")
    assert kafka.ensure_topic(room.bootstrap, topic) is True
    produce(ada, topic, [b"1", b"2"])  # idempotent by default: no IDEMPOTENT_WRITE on the cluster needed (KIP-679)
    produce(ada, topic, [b"3"], transactional_id="xo.ada.06-kafka-end-to-end.relay")
    assert consume_in_group(ada, topic, "xo.ada.01-three-guarantees.group", want=3) == 3
    assert kafka.group_offsets(room.bootstrap, "xo.ada.01-three-guarantees.group", topic)
    kafka.set_topic_config(room.bootstrap, topic, {"retention.ms": "600000"})
    assert kafka.topic_configs(room.bootstrap, topic)["retention.ms"] == "600000"
    assert kafka.count_records(room.bootstrap, topic) >= 4  # three records and a transaction marker
    kafka.delete_group(room.bootstrap, "xo.ada.01-three-guarantees.group")
    assert "xo.ada.01-three-guarantees.group" not in kafka.consumer_groups(room.bootstrap)
    kafka.delete_topics(room.bootstrap, [topic])
    assert topic not in kafka.topics(room.bootstrap)


@pytest.fixture(scope="module")
def bobs_topic(room):
    topic = "xo.bob.04-at-least-once.orders"
    kafka.ensure_topic(room.bootstrap, topic, login=room.login("bob"))
    produce(room.login("bob"), topic, [b"bob's order"])
    return topic


def test_a_learner_cannot_read_write_configure_or_delete_another_learners_topic(room, as_learner, bobs_topic):
    as_learner("ada")
    expected = re.escape(f"ada may not {{}} {bobs_topic} (TOPIC_AUTHORIZATION_FAILED)").replace(r"\{\}", "{}")
    with pytest.raises(CourseError, match=expected.format("read topic")) as error:
        kafka.end_offsets(room.bootstrap, bobs_topic)
    assert "starts with xo.ada." in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(CourseError, match=expected.format("read topic")):
        kafka.read_range(room.bootstrap, bobs_topic, {0: (0, 1), 1: (0, 1)}, timeout_s=5)
    assert "starts with xo.ada." in refused(lambda: produce(room.login("ada"), bobs_topic), room, "ada",
                                            "write topic", bobs_topic)
    with pytest.raises(CourseError, match=expected.format(re.escape("read the settings of topic"))):
        kafka.topic_configs(room.bootstrap, bobs_topic)
    with pytest.raises(CourseError, match=expected.format(re.escape("change the settings of topic"))):
        kafka.set_topic_config(room.bootstrap, bobs_topic, {"retention.ms": "1"})
    with pytest.raises(CourseError, match=expected.format("delete topic")):
        kafka.delete_topics(room.bootstrap, [bobs_topic])
    assert bobs_topic not in kafka.topics(room.bootstrap)  # she does not even see it listed
    assert kafka.topics(room.bootstrap, login=room.login("bob")).count(bobs_topic) == 1  # it is all still there


def test_a_learner_cannot_create_a_topic_outside_her_prefix(room, as_learner):
    as_learner("ada")
    for topic in ("xo.bob.mine-now", "orders", "xo.ada"):  # xo.ada is no topic of hers: her prefix ends with a dot
        with pytest.raises(CourseError, match=f"ada may not create topic {topic} .TOPIC_AUTHORIZATION_FAILED"):
            kafka.ensure_topic(room.bootstrap, topic)


def test_a_learner_cannot_use_another_learners_group_or_transactional_id(room):
    ada, topic = room.login("ada"), "xo.ada.06-kafka-end-to-end.input"
    kafka.ensure_topic(room.bootstrap, topic, login=ada)
    produce(ada, topic)
    line = refused(lambda: consume_in_group(ada, topic, "xo.bob.06-kafka-end-to-end.relay", want=1), room, "ada",
                   "use consumer group", "xo.bob.06-kafka-end-to-end.relay")
    assert "(GROUP_AUTHORIZATION_FAILED)" in line and "consumer group only when its name starts with xo.ada." in line
    line = refused(lambda: produce(ada, topic, transactional_id="xo.bob.06-kafka-end-to-end.relay"), room, "ada",
                   "use transactional id", "xo.bob.06-kafka-end-to-end.relay")
    assert "(TRANSACTIONAL_ID_AUTHORIZATION_FAILED)" in line


def test_a_wrong_password_is_refused_with_what_to_do(room):
    wrong = replace(room.login("ada"), password="not-her-password")
    with pytest.raises(CourseError, match="refused the password of 'ada' .SASL_AUTHENTICATION_FAILED.") as error:
        kafka.topics(room.bootstrap, login=wrong)  # the broker's answer, not kafka-python's bootstrap timeout
    assert "join token" in str(error.value) and "workshop join" in str(error.value)
    with pytest.raises(CourseError, match="refused the password"):
        with kafka.consumer(room.bootstrap, login=wrong, bootstrap_timeout_ms=2000):  # default with a login: 10 s
            pass


def test_the_board_reads_the_learners_board_topics_and_nothing_else(room):
    ada, board = room.login("ada"), room.login("board")
    mine = classauth.board_topic("ada")
    produce(ada, mine, [b'{"kind": "hello", "learner": "ada", "v": 1}'])  # a learner's kernel reports
    with kafka.consumer(room.bootstrap, login=board) as reader:
        partition = TopicPartition(mine, 0)
        reader.assign([partition])
        reader.seek_to_beginning(partition)
        records = [r for batch in reader.poll(timeout_ms=5000).values() for r in batch]
    assert any(b'"learner": "ada"' in r.value for r in records)
    assert records[0].timestamp_type == 1  # LogAppendTime: the broker's clock, whatever the sender's says
    assert refused(lambda: produce(board, mine), room, "board", "write topic", mine).startswith(
        "Kafka refused: board may not write topic")
    assert kafka.topics(room.bootstrap, login=board) == [classauth.board_topic("ada"), classauth.board_topic("bob")]
    with pytest.raises(CourseError, match="board may not create topic"):
        kafka.ensure_topic(room.bootstrap, "xo.board.anything", login=board)
    with pytest.raises((CourseError, ValueError)):  # no DESCRIBE_CONFIGS on it: kafka-python refuses before sending
        kafka.set_topic_config(room.bootstrap, mine, {"retention.ms": "1000"}, login=ada)  # admin's topic
    admin = classbroker.admin_login()
    assert CLASS_TOPIC not in kafka.topics(admin.broker, login=admin)  # no shared topic any more


def test_the_class_board_logs_in_as_board_on_the_class_broker_of_this_machine(room, capsys):
    from deliverylab.workshop import board

    produce(room.login("ada"), classauth.board_topic("ada"),
            [b'{"kind": "hello", "learner": "ada", "v": 1, "module": "01-three-guarantees"}'])
    assert classbroker.board_login() == room.login("board")
    assert board.main(["--class", "--once"]) == 0
    assert re.search(r"^ada ", capsys.readouterr().out, re.M)


def test_a_learner_added_to_the_roster_joins_while_the_broker_runs(room):
    roster = room.state / "class.txt"
    roster.write_text("ada\nbob\ncy\n")
    pid = classbroker.status().pid
    st = classbroker.up(roster, log=lambda m: None)
    assert st.pid == pid and st.learners == 3  # the broker kept running
    passwords = classauth.read_passwords(classbroker.paths(config.settings())["passwords"])
    assert passwords["ada"] == room.passwords["ada"]  # tokens already handed out stay valid
    cy = KafkaLogin(room.bootstrap, "cy", passwords["cy"])
    assert kafka.ensure_topic(room.bootstrap, "xo.cy.00-setup-and-tour.orders", login=cy)
    with pytest.raises(CourseError, match="cy may not create topic xo.ada.x"):
        kafka.ensure_topic(room.bootstrap, "xo.ada.x", login=cy)


def test_workshop_join_with_a_token_logs_every_course_client_in(room):
    from deliverylab import orders
    from deliverylab.workshop import join

    token = classauth.join_token(room.bootstrap, "bob", room.passwords["bob"])
    join.join(token, None, log=lambda m: None)
    ini = config.workshop_file(config.settings().root)
    try:
        assert stat.S_IMODE(ini.stat().st_mode) == 0o600 and room.passwords["bob"] in ini.read_text()
        s = config.settings()
        assert (s.bootstrap, s.learner, s.kafka_login) == (room.bootstrap, "bob", room.login("bob"))
        topic = s.lesson_prefix("00-setup-and-tour") + "orders"
        orders.produce_orders(s.bootstrap, topic, 20, progress=False)  # the lessons' own producer, logged in
        assert kafka.count_records(s.bootstrap, topic) == 20
        with pytest.raises(CourseError, match="That join token is for learner 'bob', not 'ada'"):
            join.join(token, "ada", log=lambda m: None)
    finally:
        join.leave(log=lambda m: None)


@pytest.fixture(scope="session")
def spark_session():
    """The worker's Spark session (the one tests/conftest.py's ``spark`` gives, without starting the course's
    broker), made with the state folder the run had before the module's ``room`` moved it: later tests of this
    worker reuse it."""
    from deliverylab.stack.session import get_spark

    with pytest.MonkeyPatch.context() as mp:
        for name, value in RUN_ENVIRONMENT.items():
            mp.setenv(name, value) if value is not None else mp.delenv(name, raising=False)
        return get_spark("tests")


def test_spark_reads_and_writes_the_class_broker_with_the_learners_login(room, spark_session):
    ada, topic = room.login("ada"), "xo.ada.06-kafka-end-to-end.spark"
    kafka.ensure_topic(room.bootstrap, topic, login=ada)
    login = kafka.spark_security(room.bootstrap, ada)
    assert login["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    rows = spark_session.createDataFrame([(f"o-{i}", f"{i}") for i in range(5)], "key string, value string")
    rows.write.format("kafka").option("kafka.bootstrap.servers", room.bootstrap).options(**login) \
        .option("topic", topic).save()  # Spark's Kafka sink: an idempotent producer, WRITE on her topic
    read = (spark_session.read.format("kafka").option("kafka.bootstrap.servers", room.bootstrap).options(**login)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())
    assert read.count() == 5  # Spark's Kafka source: an admin client and assigned consumers, no group to join


def test_the_docker_class_broker_gets_the_same_logins_and_acls(room):
    """`stack up --class --docker` starts nothing: it writes the compose file's variables and grants on the broker
    that answers the admin login (here the module's broker stands in for docker/class-broker.yaml's)."""
    roster = room.state / "class.txt"
    roster.write_text("ada\nbob\ncy\ndee\n")
    st = classbroker.up(roster, log=lambda m: None, docker=True)
    assert st.learners == 4
    env_file = classbroker.paths(config.settings())["docker_env"]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    passwords = classauth.read_passwords(classbroker.paths(config.settings())["passwords"])
    assert f"DELIVERYLAB_CLASS_ADMIN_PASSWORD={passwords['admin']}" in env_file.read_text()
    dee = KafkaLogin(room.bootstrap, "dee", passwords["dee"])  # a SCRAM credential through the Admin API
    assert kafka.ensure_topic(room.bootstrap, "xo.dee.01-three-guarantees.orders", login=dee)


def test_a_learner_without_a_password_is_told_to_ask_for_her_join_token(room, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_BROKER", room.bootstrap)  # the address alone, as before logins
    monkeypatch.setenv("DELIVERYLAB_LEARNER", "ada")
    line = str(broker.shared_broker_error(config.settings()))
    assert "answered no Kafka request without a login" in line and "workshop join <token>" in line


def test_the_login_probe_tells_a_refused_password_from_an_accepted_one(room):
    from deliverylab.stack import loginprobe

    ada = room.login("ada")
    assert loginprobe.refused(room.bootstrap, ada) is False
    for _ in range(5):  # Kafka often hangs up on a wrong proof without an error response: both are refusals
        assert loginprobe.refused(room.bootstrap, replace(ada, password="nope")) is True
    assert loginprobe.refused(room.bootstrap, replace(ada, username="nobody")) is True
    admin = classbroker.admin_login()
    assert loginprobe.refused(admin.broker, admin) is False  # PLAIN on the loopback listener
    assert loginprobe.refused(admin.broker, replace(admin, password="nope")) is True
    assert loginprobe.refused(admin.broker, ada) is None  # SCRAM is not enabled on INTERNAL: cannot tell


def test_a_learners_runaway_producer_is_held_to_her_quota_and_a_lesson_burst_is_not(room):
    """The default user quota (stack/classquota.py), set by `stack up --class`: eve's producer loop, flat out, is
    throttled by the broker and never gets much more than PRODUCER_BYTE_RATE over the broker's window (Kafka
    lets ~10 s of the quota through at once, then delays its responses); her first lesson-sized burst, and bob's
    while she floods, are not throttled at all. Behaviour only: how fast her loop goes depends on the machine
    (0.3 to 1.1 MiB/s seen), so she floods until the broker throttles her, and no figure here is a speed."""
    import threading

    from deliverylab.orders import encode, generate_orders
    from deliverylab.stack import classquota
    from deliverylab.workshop.roomload import abandon, flood, throttle_ms

    roster = room.state / "class.txt"
    roster.write_text("ada\nbob\neve\n")
    classbroker.up(roster, log=lambda m: None)  # eve joins; the quotas are set already (quotas.json): no JVM
    eve = KafkaLogin(room.bootstrap, "eve", classauth.read_passwords(classbroker.paths(config.settings())["passwords"])["eve"])
    bob = room.login("bob")

    def lesson_burst(login: KafkaLogin, topic: str) -> float:
        """300 orders as orders.produce sends them; the largest throttle the broker asked for (ms)."""
        kafka.ensure_topic(room.bootstrap, topic, partitions=3, login=login)
        producer = KafkaProducer(bootstrap_servers=room.bootstrap, acks="all", linger_ms=50, batch_size=1 << 20,
                                 **classauth.client_options(login))
        try:
            for order in generate_orders(300):
                producer.send(topic, key=order["order_id"].encode(), value=encode(order))
            producer.flush(timeout=120)
            return throttle_ms(producer.metrics())
        finally:
            producer.close(timeout=2)

    assert lesson_burst(eve, "xo.eve.04-at-least-once.orders") == 0

    topic = "xo.eve.runaway"
    kafka.ensure_topic(room.bootstrap, topic, partitions=1, login=eve)
    producer = KafkaProducer(bootstrap_servers=room.bootstrap, acks="all", linger_ms=5, batch_size=64 * 1024,
                             **classauth.client_options(eve))
    bobs: list[float] = []
    beside = threading.Timer(3.0, lambda: bobs.append(lesson_burst(bob, "xo.bob.04-at-least-once.orders")))
    beside.start()
    acked = elapsed = 0.0
    try:
        # flat out (16 KB records) until the broker tells her to wait, or far past what the quota allows
        while not throttle_ms(producer.metrics()) and acked < 4 * classquota.free_burst_bytes(classquota.PRODUCER_BYTE_RATE):
            more, seconds = flood(producer, topic, 2.0)
            acked, elapsed = acked + more, elapsed + seconds
        eve_throttled = throttle_ms(producer.metrics())
    finally:
        abandon(producer)  # what she still has in flight, the broker would hold back for seconds more
        beside.join(timeout=300)
    assert eve_throttled > 0, acked  # the broker told her to wait: the quota held her
    rate = acked / classquota.window_seconds(elapsed)  # what the broker measures
    assert rate <= 1.5 * classquota.PRODUCER_BYTE_RATE, (acked, elapsed)  # never much more than her quota
    assert bobs == [0]  # his own share, untouched by her flood


def test_a_learners_own_client_without_the_login_is_told_to_pass_it(room, monkeypatch):
    """What a lab's learner writes: a KafkaProducer with lesson.bootstrap and no **lesson.login. kafka-python gives up
    (after 30 s by default; 3 s here) with no word about logins; the course's kernel adds the line that has one."""
    from kernels import run_cells

    from deliverylab.stack import loginhint

    with pytest.raises(Exception) as no_login:
        KafkaProducer(bootstrap_servers=room.bootstrap, bootstrap_timeout_ms=3000)
    assert loginhint.hint(no_login.value, room.login("ada")).startswith(
        f"The class broker at {room.bootstrap} answers your login, but this client got no answer")
    assert loginhint.hint(no_login.value, KafkaLogin("127.0.0.1:9", "ada", "pw")) is None  # no broker there at all

    env = {**os.environ, "DELIVERYLAB_BROKER": room.bootstrap, "DELIVERYLAB_LEARNER": "ada",
           "DELIVERYLAB_KAFKA_PASSWORD": room.passwords["ada"]}
    _, (reply, shown), (_, other) = run_cells([
        "from deliverylab.todos import explain_errors; explain_errors(names=True)",
        f"from kafka import KafkaProducer\nKafkaProducer(bootstrap_servers={room.bootstrap!r}, bootstrap_timeout_ms=3000)",
        "raise ValueError('not a Kafka error')"], env=env)
    errors = shown + other
    assert reply["content"]["status"] == "error"  # Run All stops there
    no_login_shown, other_shown = errors
    assert no_login_shown["traceback"][0] == f"KafkaTimeoutError: Unable to bootstrap from {room.bootstrap}"
    assert "**lesson.login" in no_login_shown["traceback"][1] and len(no_login_shown["traceback"]) == 2
    assert other_shown["ename"] == "ValueError" and len(other_shown["traceback"]) > 2  # IPython's own traceback


def test_bobs_lesson_01_consumer_on_adas_topic_is_refused_in_one_line(room, as_learner, tmp_path):
    """A lesson's consumer process (lesson 01's, which reads its login from the environment it inherits), run as bob
    on the topic of ada's lesson. Lessons 01, 04 and 06 themselves run as ada in make test (stack/classrun.py)."""
    from deliverylab.lesson import Lesson
    from deliverylab.modules import m01

    def lesson(learner: str) -> Lesson:
        as_learner(learner)
        folder = tmp_path / learner
        for sub in ("checkpoints", "tables"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        return Lesson(name="01-three-guarantees", learner=learner, bootstrap=room.bootstrap, folder=folder)

    adas = lesson("ada")
    adas.produce_orders(20, progress=False)
    bobs_folder = lesson("bob").folder
    on_adas_topic = Lesson(name=adas.name, learner="ada", bootstrap=adas.bootstrap, folder=bobs_folder)
    try:
        with pytest.raises(CourseError) as refused:
            m01.run_consumer("offsets_with_data", on_adas_topic, timeout_s=30)
    finally:
        as_learner("ada")
        adas.cleanup()
    line = str(refused.value)
    assert "\n" not in line and line.startswith("the offsets_with_data consumer failed (exit code 2): Kafka refused")
    assert ("Kafka refused: bob may not read topic xo.ada.01-three-guarantees.orders (TOPIC_AUTHORIZATION_FAILED)"
            in line and "starts with xo.bob." in line), line
