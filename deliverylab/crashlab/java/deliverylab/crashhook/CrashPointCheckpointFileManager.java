package deliverylab.crashhook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager;

/**
 * Spark's normal checkpoint writer, plus three exact moments at which the course can kill
 * the driver (SIGKILL of the Python driver process, then an immediate halt of this JVM;
 * the fourth point, mid_sink_write, is {@link MidWriteGate}):
 *
 *   before_sink_write  offsets/N has just been written; the sink has not been called
 *   after_sink_write   the sink has finished; commits/N is about to be written (it never is)
 *   after_commit       commits/N has just been written
 *
 * A crash is armed by a one-line file named by DELIVERYLAB_CRASH_FILE: "point batch", where
 * batch is a number or "next" (the next batch that reaches the point). When a crash fires,
 * the hook writes the same line plus the batch id to "<file>.fired" and removes the armed
 * file, so the restarted driver runs normally. With no armed file it does nothing at all.
 */
public class CrashPointCheckpointFileManager extends FileContextBasedCheckpointFileManager {

    public CrashPointCheckpointFileManager(Path path, Configuration conf) {
        super(path, conf);
    }

    @Override
    public CheckpointFileManager.CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
        String log = path.getParent() == null ? "" : path.getParent().getName();
        long batch = batchId(path.getName());
        if (batch >= 0 && log.equals("commits")) {
            crashIfArmed("after_sink_write", batch);
        }
        CheckpointFileManager.CancellableFSDataOutputStream stream = super.createAtomic(path, overwriteIfPossible);
        if (batch >= 0 && log.equals("offsets")) {
            return new CrashAfterClose(stream, "before_sink_write", batch);
        }
        if (batch >= 0 && log.equals("commits")) {
            return new CrashAfterClose(stream, "after_commit", batch);
        }
        return stream;
    }

    private static long batchId(String name) {
        try {
            return Long.parseLong(name);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Is a crash armed at this point for this batch (or for the next batch)? */
    static boolean isArmed(String point, long batch) {
        String armedFile = System.getenv("DELIVERYLAB_CRASH_FILE");
        if (armedFile == null) {
            return false;
        }
        String armed;
        try {
            armed = new String(Files.readAllBytes(Paths.get(armedFile)), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return false; // nothing armed
        }
        String[] parts = armed.split("\\s+");
        if (parts.length != 2 || !parts[0].equals(point)) {
            return false;
        }
        return parts[1].equals("next") || parts[1].equals(Long.toString(batch));
    }

    /** If armed here: record the crash, SIGKILL the Python driver, halt this JVM. Never returns then. */
    static void crashIfArmed(String point, long batch) {
        if (!isArmed(point, batch)) {
            return;
        }
        String armedFile = System.getenv("DELIVERYLAB_CRASH_FILE");
        try {
            java.nio.file.Path fired = Paths.get(armedFile + ".fired");
            java.nio.file.Path tmp = Paths.get(armedFile + ".fired.tmp");
            Files.write(tmp, (point + " " + batch + "\n").getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, fired, StandardCopyOption.ATOMIC_MOVE);
            Files.deleteIfExists(Paths.get(armedFile));
        } catch (IOException e) {
            // the crash itself matters more than its record
        }
        String driverPid = System.getenv("DELIVERYLAB_DRIVER_PID");
        if (driverPid != null) {
            ProcessHandle.of(Long.parseLong(driverPid.trim())).ifPresent(ProcessHandle::destroyForcibly);
        }
        Runtime.getRuntime().halt(137);
    }

    /** Passes every byte through; once the file is complete and closed, crashes if armed. */
    static final class CrashAfterClose extends CheckpointFileManager.CancellableFSDataOutputStream {
        private final CheckpointFileManager.CancellableFSDataOutputStream inner;
        private final String point;
        private final long batch;

        CrashAfterClose(CheckpointFileManager.CancellableFSDataOutputStream inner, String point, long batch) {
            super(inner);
            this.inner = inner;
            this.point = point;
            this.batch = batch;
        }

        @Override
        public void cancel() {
            inner.cancel();
        }

        @Override
        public void close() throws IOException {
            super.close();
            crashIfArmed(point, batch);
        }
    }
}
