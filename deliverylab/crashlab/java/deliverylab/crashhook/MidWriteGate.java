package deliverylab.crashhook;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * The crash lab's mid_sink_write trap: a filter every crash-lab pipeline applies to its input.
 * It keeps every row. When "mid_sink_write" is armed for the running micro-batch, the write
 * task of partition 1, after a few rows, waits a moment (so partition 0's task finishes its
 * part of the write) and then kills the driver exactly like the checkpoint hook does.
 *
 * A task knows its micro-batch from the local property "streaming.sql.batchId", which the
 * streaming query sets on every job of a batch, including the jobs foreachBatch starts.
 * It runs inside the JVM, so the pipelines need no Python workers.
 */
public class MidWriteGate implements UDF1<String, Boolean> {
    public static final String NAME = "deliverylab_mid_write_gate";
    public static final String BATCH_ID_PROPERTY = "streaming.sql.batchId";
    public static final int PARTITION = 1;
    public static final long AFTER_ROWS = 5;
    public static final long WAIT_MS = 1500;

    private static final ConcurrentHashMap<String, AtomicLong> ROWS_SEEN = new ConcurrentHashMap<>();

    @Override
    public Boolean call(String orderId) {
        TaskContext ctx = TaskContext.get();
        if (ctx == null || ctx.partitionId() != PARTITION) {
            return Boolean.TRUE;
        }
        String raw = ctx.getLocalProperty(BATCH_ID_PROPERTY);
        if (raw == null) {
            return Boolean.TRUE;
        }
        long batch = Long.parseLong(raw);
        String task = batch + "/" + ctx.stageId() + "/" + ctx.stageAttemptNumber() + "/" + ctx.attemptNumber();
        long seen = ROWS_SEEN.computeIfAbsent(task, k -> new AtomicLong()).incrementAndGet();
        // the armed file is read once per task, not once per row
        if (seen == AFTER_ROWS && CrashPointCheckpointFileManager.isArmed("mid_sink_write", batch)) {
            try {
                Thread.sleep(WAIT_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            CrashPointCheckpointFileManager.crashIfArmed("mid_sink_write", batch);
        }
        return Boolean.TRUE;
    }

    /** Registers the gate as a SQL function named {@link #NAME}, marked non-deterministic. */
    public static void register(SparkSession spark) {
        UserDefinedFunction gate = functions.udf(new MidWriteGate(), DataTypes.BooleanType).asNondeterministic();
        spark.udf().register(NAME, gate);
    }
}
