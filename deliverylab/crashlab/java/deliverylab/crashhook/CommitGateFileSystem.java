package deliverylab.crashhook;

import java.io.File;
import java.io.IOException;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local file system, with one gate: lesson 10's two-driver run holds one driver inside its commit.
 *
 * A catalog (or a table) that names this class as its "fs.file.impl" (with "fs.file.impl.disable.cache" true, so
 * that the setting is read at all) gets the ordinary local file system, except for one moment: when it creates a
 * file whose name matches the pattern in "deliverylab.gate.pattern" and the file "armed" exists in the folder
 * "deliverylab.gate.folder", it removes "armed" (so the gate holds once), creates "arrived", and waits until
 * "released" exists there (at most WAIT_MS), then creates the file as usual. The notebook meets it through those
 * three files. An Iceberg commit of the Hadoop catalog writes its next metadata file under a temporary name
 * (a UUID) after the streaming sink has checked the table and before the rename that makes the commit, so a
 * pattern on that name holds the commit exactly between the two.
 */
public class CommitGateFileSystem extends LocalFileSystem {
    public static final String FOLDER = "deliverylab.gate.folder";
    public static final String PATTERN = "deliverylab.gate.pattern";
    public static final long WAIT_MS = 300_000;

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        hold(f);
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    private void hold(Path f) throws IOException {
        String folder = getConf() == null ? null : getConf().get(FOLDER);
        String pattern = getConf() == null ? null : getConf().get(PATTERN);
        if (folder == null || pattern == null || !f.getName().matches(pattern)) {
            return;
        }
        synchronized (CommitGateFileSystem.class) {
            if (!new File(folder, "armed").delete()) {
                return;  // not armed, or a later file: only the first one waits
            }
        }
        new File(folder, "arrived").createNewFile();
        File released = new File(folder, "released");
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!released.exists() && System.currentTimeMillis() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
