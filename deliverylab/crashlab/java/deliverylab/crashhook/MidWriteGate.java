package deliverylab.crashhook;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.util.TaskCompletionListener;

/**
 * The crash lab's mid_sink_write trap: a filter every crash-lab pipeline applies to its input.
 * It keeps every row. When "mid_sink_write" is armed for the running micro-batch, the write
 * task of partition 1, after a few rows, waits until partition 0's task of the same stage has
 * finished (its part of the write is then on disk) and then kills the driver exactly like the
 * checkpoint hook does.
 *
 * The wait is on an event, not a clock: in local mode both tasks run in this JVM, and partition
 * 0's task counts a latch down when it completes (at most WAIT_CAP_MS, should it have no row to
 * pass through here). Where the tasks run in executors of their own (a cluster), partition 1
 * cannot see partition 0's task end and waits WAIT_MS instead.
 *
 * A task knows its micro-batch from the local property "streaming.sql.batchId", which the
 * streaming query sets on every job of a batch, including the jobs foreachBatch starts.
 * It runs inside the JVM, so the pipelines need no Python workers.
 */
public class MidWriteGate implements UDF1<String, Boolean> {
    public static final String NAME = "deliverylab_mid_write_gate";
    public static final String BATCH_ID_PROPERTY = "streaming.sql.batchId";
    public static final int PARTITION = 1;
    public static final int FINISHED_FIRST = 0;
    public static final long AFTER_ROWS = 5;
    public static final long WAIT_MS = 1500;
    public static final long WAIT_CAP_MS = 30000;

    private static final ConcurrentHashMap<String, AtomicLong> ROWS_SEEN = new ConcurrentHashMap<>();
    /** per stage of a batch: counted down when partition 0's task of that stage has completed */
    private static final ConcurrentHashMap<String, CountDownLatch> FIRST_DONE = new ConcurrentHashMap<>();

    @Override
    public Boolean call(String orderId) {
        TaskContext ctx = TaskContext.get();
        if (ctx == null) {
            return Boolean.TRUE;
        }
        String raw = ctx.getLocalProperty(BATCH_ID_PROPERTY);
        if (raw == null) {
            return Boolean.TRUE;
        }
        long batch = Long.parseLong(raw);
        String stage = batch + "/" + ctx.stageId() + "/" + ctx.stageAttemptNumber();
        String task = stage + "/" + ctx.partitionId() + "/" + ctx.attemptNumber();
        long seen = ROWS_SEEN.computeIfAbsent(task, k -> new AtomicLong()).incrementAndGet();
        if (ctx.partitionId() == FINISHED_FIRST) {
            if (seen == 1) {  // once per task: its end means its part of the write is on disk
                ctx.addTaskCompletionListener(new TaskCompletionListener() {
                    @Override
                    public void onTaskCompletion(TaskContext done) {
                        firstDone(stage).countDown();
                    }
                });
            }
            return Boolean.TRUE;
        }
        // the armed file is read once per task, not once per row
        if (ctx.partitionId() == PARTITION && seen == AFTER_ROWS
                && CrashPointCheckpointFileManager.isArmed("mid_sink_write", batch)) {
            waitForPartitionZero(stage);
            CrashPointCheckpointFileManager.crashIfArmed("mid_sink_write", batch);
        }
        return Boolean.TRUE;
    }

    private static CountDownLatch firstDone(String stage) {
        return FIRST_DONE.computeIfAbsent(stage, k -> new CountDownLatch(1));
    }

    private static void waitForPartitionZero(String stage) {
        SparkEnv env = SparkEnv.get();
        boolean oneJvm = env != null && "driver".equals(env.executorId());  // local mode: every task runs here
        try {
            if (oneJvm) {
                firstDone(stage).await(WAIT_CAP_MS, TimeUnit.MILLISECONDS);
            } else {
                Thread.sleep(WAIT_MS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Registers the gate as a SQL function named {@link #NAME}, marked non-deterministic. */
    public static void register(SparkSession spark) {
        UserDefinedFunction gate = functions.udf(new MidWriteGate(), DataTypes.BooleanType).asNondeterministic();
        spark.udf().register(NAME, gate);
    }
}
