package deliverylab.crashhook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;

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
 * batch is a number or "next" (the next batch that reaches the point). These three points skip
 * a batch that reads no new records (its offsets/N names the same source offsets as offsets/N-1:
 * the no-data batch Spark runs to move a watermark on), so an armed crash always hits a batch
 * with orders in it; a number then means "this batch, or the first one after it with data".
 * When a crash fires,
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
        java.nio.file.Path root = localCheckpoint(path);
        if (batch >= 0 && log.equals("commits")) {
            crashIfArmed("after_sink_write", batch, root);
        }
        CheckpointFileManager.CancellableFSDataOutputStream stream = super.createAtomic(path, overwriteIfPossible);
        if (batch >= 0 && log.equals("offsets")) {
            return new CrashAfterClose(stream, "before_sink_write", batch, root);
        }
        if (batch >= 0 && log.equals("commits")) {
            return new CrashAfterClose(stream, "after_commit", batch, root);
        }
        return stream;
    }

    /** The checkpoint folder on the local disk (the parent of offsets/ and commits/), or null. */
    private static java.nio.file.Path localCheckpoint(Path path) {
        Path log = path.getParent();
        if (log == null || log.getParent() == null) {
            return null;
        }
        String scheme = log.getParent().toUri().getScheme();
        if (scheme != null && !scheme.equals("file")) {
            return null;
        }
        return Paths.get(log.getParent().toUri().getPath());
    }

    /** The source offsets recorded in offsets/N (its lines after the version and the batch metadata). */
    private static String sourceOffsets(java.nio.file.Path root, long batch) throws IOException {
        java.util.List<String> lines = Files.readAllLines(root.resolve("offsets").resolve(Long.toString(batch)),
                StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.min(2, lines.size()), lines.size()));
    }

    /** Does batch N read new records? False only when offsets/N and offsets/N-1 name the same offsets. */
    static boolean readsNewRecords(java.nio.file.Path root, long batch) {
        if (root == null || batch <= 0) {
            return true;
        }
        try {
            return !sourceOffsets(root, batch).equals(sourceOffsets(root, batch - 1));
        } catch (IOException | RuntimeException e) {
            return true; // unreadable: do not hold a crash back
        }
    }

    private static long batchId(String name) {
        try {
            return Long.parseLong(name);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The armed crash file's two words ("point batch"), or null when nothing (or nothing valid) is armed. */
    private static String[] armedLine() {
        String armedFile = System.getenv("DELIVERYLAB_CRASH_FILE");
        if (armedFile == null) {
            return null;
        }
        try {
            String[] parts = new String(Files.readAllBytes(Paths.get(armedFile)), StandardCharsets.UTF_8).trim()
                    .split("\\s+");
            return parts.length == 2 ? parts : null;
        } catch (IOException e) {
            return null; // nothing armed
        }
    }

    /** Is a crash armed at this point for this batch (or for the next batch)? */
    static boolean isArmed(String point, long batch) {
        String[] parts = armedLine();
        return parts != null && parts[0].equals(point)
                && (parts[1].equals("next") || parts[1].equals(Long.toString(batch)));
    }

    /** Armed here, for "next" or for this batch or an earlier one, and the batch reads new records? */
    static boolean isArmedForData(String point, long batch, java.nio.file.Path root) {
        String[] parts = armedLine();
        if (parts == null || !parts[0].equals(point)) {
            return false;
        }
        boolean due;
        try {
            due = parts[1].equals("next") || Long.parseLong(parts[1]) <= batch;
        } catch (NumberFormatException e) {
            return false;
        }
        return due && readsNewRecords(root, batch);
    }

    /** The checkpoint hook's version of crashIfArmed: no-data batches are passed over. */
    static void crashIfArmed(String point, long batch, java.nio.file.Path root) {
        if (isArmedForData(point, batch, root)) {
            fire(point, batch);
        }
    }

    /** If armed here: record the crash, SIGKILL the Python driver, halt this JVM. Never returns then. */
    static void crashIfArmed(String point, long batch) {
        if (isArmed(point, batch)) {
            fire(point, batch);
        }
    }

    /** Record the crash, SIGKILL the Python driver, halt this JVM. Never returns. */
    private static void fire(String point, long batch) {
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
        private final java.nio.file.Path root;

        CrashAfterClose(CheckpointFileManager.CancellableFSDataOutputStream inner, String point, long batch,
                        java.nio.file.Path root) {
            super(inner);
            this.inner = inner;
            this.point = point;
            this.batch = batch;
            this.root = root;
        }

        @Override
        public void cancel() {
            inner.cancel();
        }

        @Override
        public void close() throws IOException {
            super.close();
            crashIfArmed(point, batch, root);
        }
    }
}
