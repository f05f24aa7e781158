package deliverylab.classpolicy;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.AlterConfigPolicy;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/**
 * The class broker's limits on what a learner may create and configure (deliverylab/stack/classlimits.py
 * mirrors the numbers; tests/stack/test_classlimits.py keeps both in step).
 *
 * Kafka runs this class inside the controller (create.topic.policy.class.name and
 * alter.config.policy.class.name), once for every topic a CreateTopics request names and once for every
 * resource an AlterConfigs request changes. It is never told who sent the request, so the learner is read
 * from the topic's name: xo.LEARNER.anything. That is sound on the class broker, where each learner's
 * prefixed ACLs let only her (and admin) create or configure topics under her own prefix. Topics outside
 * every learner's prefix (Kafka's own, the board's xo._board.*) are left alone: learners cannot create them.
 *
 * What a learner already holds is counted from the broker's own log folders: one folder per partition,
 * named TOPIC-N (the class broker is one node, so every partition is there). Topics approved in the last
 * LEDGER_MS count with every partition they were approved for, whether or not their folders exist yet, so a
 * burst of requests cannot slip past the count. A refusal is a PolicyViolationException: the learner's client gets its message, one line that
 * names the limit, with Kafka's error POLICY_VIOLATION.
 *
 * Every limit can be changed in server.properties with deliverylab.class.NAME (e.g.
 * deliverylab.class.partitions.per.learner=300); the constants below are the values used otherwise.
 */
public class ClassTopicPolicy implements CreateTopicPolicy, AlterConfigPolicy {
    public static final int PARTITIONS_PER_TOPIC = 8;
    public static final int PARTITIONS_PER_LEARNER = 240;
    public static final int TOPICS_PER_LEARNER = 120;
    public static final long RETENTION_MS_MAX = 604800000L;
    public static final long RETENTION_BYTES_MAX = 67108864L;
    public static final long MAX_MESSAGE_BYTES_MAX = 1048588L;
    public static final long LEDGER_MS = 30000L;
    public static final long LISTING_MS = 250L;
    public static final String KEY_PREFIX = "deliverylab.class.";
    public static final String ALLOWED_CONFIGS = "retention.ms, retention.bytes, max.message.bytes, "
            + "cleanup.policy=delete, compression.type, message.timestamp.type, min.insync.replicas=1";

    static final Pattern LEARNER_TOPIC = Pattern.compile("^xo\\.([a-z0-9][a-z0-9-]{0,62})\\.(.+)$");
    static final Pattern PARTITION_FOLDER = Pattern.compile("^(.+)-(\\d+)$");

    private final List<File> logDirs = new ArrayList<>();
    private final Map<String, long[]> approved = new HashMap<>();  // topic -> {partitions, approved at (ms)}
    private String[] listing = new String[0];
    private long listedAt = 0L;
    int partitionsPerTopic = PARTITIONS_PER_TOPIC;
    int partitionsPerLearner = PARTITIONS_PER_LEARNER;
    int topicsPerLearner = TOPICS_PER_LEARNER;
    long retentionMsMax = RETENTION_MS_MAX;
    long retentionBytesMax = RETENTION_BYTES_MAX;
    long maxMessageBytesMax = MAX_MESSAGE_BYTES_MAX;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dirs = configs.containsKey("log.dirs") ? configs.get("log.dirs") : configs.get("log.dir");
        if (dirs != null) {
            for (String dir : String.valueOf(dirs).split(",")) {
                if (!dir.isBlank()) {
                    logDirs.add(new File(dir.trim()));
                }
            }
        }
        partitionsPerTopic = (int) number(configs, "partitions.per.topic", partitionsPerTopic);
        partitionsPerLearner = (int) number(configs, "partitions.per.learner", partitionsPerLearner);
        topicsPerLearner = (int) number(configs, "topics.per.learner", topicsPerLearner);
        retentionMsMax = number(configs, "retention.ms.max", retentionMsMax);
        retentionBytesMax = number(configs, "retention.bytes.max", retentionBytesMax);
        maxMessageBytesMax = number(configs, "max.message.bytes.max", maxMessageBytesMax);
    }

    private static long number(Map<String, ?> configs, String name, long otherwise) {
        Object value = configs.get(KEY_PREFIX + name);
        return value == null ? otherwise : Long.parseLong(String.valueOf(value).trim());
    }

    @Override
    public void validate(CreateTopicPolicy.RequestMetadata request) throws PolicyViolationException {
        String topic = request.topic();
        Matcher own = LEARNER_TOPIC.matcher(topic);
        if (!own.matches()) {
            return;
        }
        String learner = own.group(1);
        int partitions = request.numPartitions() != null ? request.numPartitions()
                : request.replicasAssignments() != null ? request.replicasAssignments().size() : 1;
        if (partitions > partitionsPerTopic) {
            throw refuse("%s asks for %d partitions; the class broker allows at most %d per topic "
                    + "(partitions.per.topic)", topic, partitions, partitionsPerTopic);
        }
        checkConfigs(request.configs());
        synchronized (approved) {
            long now = System.currentTimeMillis();
            int[] held = held(learner, now);
            if (held[0] + 1 > topicsPerLearner) {
                throw refuse("xo.%s.* holds %d topics, the class broker's limit per learner (topics.per.learner); "
                        + "delete topics you no longer need (lesson.reset())", learner, held[0]);
            }
            if (held[1] + partitions > partitionsPerLearner) {
                throw refuse("xo.%s.* holds %d partitions and %s asks for %d more; the class broker allows %d per "
                        + "learner (partitions.per.learner): delete topics you no longer need (lesson.reset())",
                        learner, held[1], topic, partitions, partitionsPerLearner);
            }
            approved.put(topic, new long[] {partitions, now});
        }
    }

    @Override
    public void validate(AlterConfigPolicy.RequestMetadata request) throws PolicyViolationException {
        ConfigResource resource = request.resource();
        if (resource.type() == ConfigResource.Type.TOPIC && LEARNER_TOPIC.matcher(resource.name()).matches()) {
            checkConfigs(request.configs());
        }
    }

    /** The topic settings a learner may choose, within bounds; a null value (a DELETE) falls back to the
     *  broker's own defaults, which the class broker sets to safe values. */
    void checkConfigs(Map<String, String> configs) {
        if (configs == null) {
            return;
        }
        for (Map.Entry<String, String> entry : configs.entrySet()) {
            String key = entry.getKey();
            String value = entry.getValue();
            if (value == null) {
                continue;
            }
            switch (key) {
                case "retention.ms":
                    bounded(key, value, 1, retentionMsMax, "retention.ms.max");
                    break;
                case "retention.bytes":
                    bounded(key, value, 1, retentionBytesMax, "retention.bytes.max");
                    break;
                case "max.message.bytes":
                    bounded(key, value, 0, maxMessageBytesMax, "max.message.bytes.max");
                    break;
                case "cleanup.policy":
                    if (!value.trim().equals("delete")) {
                        throw refuse("cleanup.policy=%s is not allowed on the class broker, only delete", value);
                    }
                    break;
                case "min.insync.replicas":
                    if (!value.trim().equals("1")) {
                        throw refuse("min.insync.replicas=%s is not allowed on the one-broker class broker, only 1", value);
                    }
                    break;
                case "compression.type":
                case "message.timestamp.type":
                    break;
                default:
                    throw refuse("%s cannot be set on the class broker (allowed: %s)", key, ALLOWED_CONFIGS);
            }
        }
    }

    private static void bounded(String key, String value, long least, long most, String limit) {
        long number;
        try {
            number = Long.parseLong(value.trim());
        } catch (NumberFormatException notANumber) {
            throw refuse("%s=%s is not a number", key, value);
        }
        if (number < least || number > most) {
            throw refuse("%s=%s is outside what the class broker allows, %d to %d (%s)", key, value, least, most, limit);
        }
    }

    /** {topics, partitions} that xo.LEARNER.* holds: partition folders on disk, plus recent approvals not there yet. */
    private int[] held(String learner, long now) {
        String prefix = "xo." + learner + ".";
        Map<String, Integer> topics = new HashMap<>();
        for (String name : folders(now)) {
            Matcher folder = PARTITION_FOLDER.matcher(name);
            if (folder.matches() && folder.group(1).startsWith(prefix)) {
                topics.merge(folder.group(1), 1, Integer::sum);
            }
        }
        // a topic approved lately counts with all the partitions it was approved for, even when only some of
        // their folders exist yet (the broker creates them one by one, and the listing may be a moment old)
        for (Iterator<Map.Entry<String, long[]>> it = approved.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, long[]> entry = it.next();
            if (now - entry.getValue()[1] > LEDGER_MS) {
                it.remove();
            } else if (entry.getKey().startsWith(prefix)) {
                topics.merge(entry.getKey(), (int) entry.getValue()[0], Math::max);
            }
        }
        int partitions = 0;
        for (int count : topics.values()) {
            partitions += count;
        }
        return new int[] {topics.size(), partitions};
    }

    /** The names in every log folder, listed again when the last listing is older than LISTING_MS. */
    private String[] folders(long now) {
        if (now - listedAt >= LISTING_MS || now < listedAt) {
            List<String> names = new ArrayList<>();
            for (File dir : logDirs) {
                String[] found = dir.list();
                if (found != null) {
                    for (String name : found) {
                        names.add(name);
                    }
                }
            }
            listing = names.toArray(new String[0]);
            listedAt = now;
        }
        return listing;
    }

    private static PolicyViolationException refuse(String format, Object... args) {
        return new PolicyViolationException(String.format(format, args));
    }

    @Override
    public void close() {
    }
}
