package lodestar.spark;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.analysis.NamedRelation;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.jdbc.JDBCRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.DataSourceRegister;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Reads what Lodestar's Spark listener needs of one finished write action inside the JVM, on a
 * thread of its own, so that Spark's listener thread pays one Py4J round trip per action and no
 * more. Compiled from this source by the driver JVM's own compiler when the listener attaches
 * (spark_emitter/capture_compiled.py).
 *
 * <p>{@link #submit} (on the listener thread) hands a write over and answers its ticket; the
 * capture thread then writes one JSON object to the ticket's file in the reader's directory:
 * {"plan": the pre-order node list (TreeNode.toJSON), "facts": {"command", "executionId",
 * "write", "relations"}}, as spark_emitter/capture.py's Plan describes them (relations keyed by
 * the first output exprId, as a string). {@link #take} waits for that file (on the listener's
 * worker thread); a file nobody will take is removed.
 */
public final class PlanCapture {
    private static final long TAKE_TIMEOUT_S = 60;
    private final ObjectMapper mapper = new ObjectMapper().disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
    private final Path directory;
    private final Set<String> writes;
    private final Set<String> v2Writes;
    private final Set<String> queryField;
    private final AtomicLong tickets = new AtomicLong();
    private final Map<Long, Future<String>> pending = new ConcurrentHashMap<>();
    private final ExecutorService thread = Executors.newSingleThreadExecutor(task -> {
        Thread daemon = new Thread(task, "lodestar-plan-capture");
        daemon.setDaemon(true);
        return daemon;
    });

    /** Plans are written to `directory`; the node names are capture.py's WRITES, V2_WRITES and QUERY_FIELD. */
    public PlanCapture(String directory, String[] writes, String[] v2Writes, String[] queryField) {
        this.directory = Path.of(directory);
        this.writes = Set.of(writes);
        this.v2Writes = Set.of(v2Writes);
        this.queryField = Set.of(queryField);
    }

    /** The ticket of the action's plan being read; -1 when the action is not a write in `writes`. */
    public long submit(QueryExecution execution) {
        LogicalPlan plan = execution.analyzed();
        if (!writes.contains(plan.nodeName())) {
            return -1;
        }
        long ticket = tickets.incrementAndGet();
        Path file = fileOf(ticket);
        FutureTask<String> writing = new FutureTask<>(() -> {
            write(execution, plan, file);
            if (!pending.containsKey(ticket)) {  // discarded meanwhile
                Files.deleteIfExists(file);
            }
            return file.toString();
        });
        pending.put(ticket, writing);  // before it runs: else a quick write finds no ticket and removes its file
        thread.execute(writing);
        return ticket;
    }

    /** The path of the ticket's file, once written (it is the caller's to remove). */
    public String take(long ticket) throws InterruptedException, ExecutionException, TimeoutException {
        Future<String> written = pending.get(ticket);
        if (written == null) {
            throw new IllegalStateException("plan " + ticket + " was discarded, or its reader closed");
        }
        try {
            return written.get(TAKE_TIMEOUT_S, TimeUnit.SECONDS);
        } finally {
            pending.remove(ticket);
        }
    }

    /** The ticket's plan will not be taken: its file is removed, now or once written. */
    public void discard(long ticket) throws IOException {
        Future<String> written = pending.remove(ticket);
        if (written != null && written.isDone()) {
            Files.deleteIfExists(fileOf(ticket));
        }
    }

    private Path fileOf(long ticket) {
        return directory.resolve(ticket + ".json");
    }

    /** Stops the capture thread; plans not written yet are not. */
    public void close() {
        thread.shutdownNow();
        pending.clear();
    }

    private void write(QueryExecution execution, LogicalPlan plan, Path file)
            throws IOException, ReflectiveOperationException {
        String command = plan.nodeName();
        LogicalPlan query = (LogicalPlan) invoke(plan, "query");
        Map<String, Object> write = new LinkedHashMap<>();
        if (plan instanceof InsertIntoHadoopFsRelationCommand insert) {
            write.put("path", insert.outputPath().toString());
            write.put("format", format(insert.fileFormat()));
            write.put("columns", CollectionConverters.asJava(insert.outputColumnNames()));
        } else if (v2Writes.contains(command)) {
            write.putAll(v2Facts((NamedRelation) invoke(plan, "table")));
        }
        write.put("schema", query.schema().json());
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("command", command);
        facts.put("executionId", execution.id());
        facts.put("write", write);
        facts.put("relations", relationFacts(queryField.contains(command) ? query : plan));
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            out.write("{\"plan\":");
            out.write(plan.toJSON());  // (the JSON tree itself, jsonValue, is private)
            out.write(",\"facts\":");
            mapper.writeValue(out, facts);
            out.write("}");
        }
    }

    private static Map<String, Map<String, Object>> relationFacts(LogicalPlan root) {
        Map<String, Map<String, Object>> facts = new LinkedHashMap<>();
        Deque<LogicalPlan> pending = new ArrayDeque<>(List.of(root));
        while (!pending.isEmpty()) {
            LogicalPlan next = pending.removeFirst();
            for (LogicalPlan leaf : CollectionConverters.asJava(next.collectLeaves())) {
                if (!(leaf instanceof LogicalRelation) && !(leaf instanceof DataSourceV2Relation)) {
                    continue;
                }
                List<Attribute> output = CollectionConverters.asJava(leaf.output());
                if (output.isEmpty()) {
                    continue;
                }
                String exprId = Long.toString(output.get(0).exprId().id());
                if (!facts.containsKey(exprId)) {
                    facts.put(exprId, leafFacts(leaf));
                }
            }
            pending.addAll(CollectionConverters.asJava(next.subqueriesAll()));
        }
        return facts;
    }

    private static Map<String, Object> leafFacts(LogicalPlan leaf) {
        Map<String, Object> facts = new LinkedHashMap<>();
        if (leaf instanceof DataSourceV2Relation relation) {
            facts.put("kind", "v2");
            facts.putAll(v2Facts(relation));
            return facts;
        }
        BaseRelation relation = ((LogicalRelation) leaf).relation();
        if (relation instanceof HadoopFsRelation files) {
            List<String> paths = new ArrayList<>();
            CollectionConverters.asJava(files.location().rootPaths()).forEach(path -> paths.add(path.toString()));
            facts.put("kind", "files");
            facts.put("paths", paths);
            facts.put("format", format(files.fileFormat()));
        } else if (relation instanceof JDBCRelation jdbc) {
            facts.put("kind", "jdbc");
            facts.put("url", jdbc.jdbcOptions().url());
            facts.put("table", jdbc.jdbcOptions().tableOrQuery());
        } else {
            facts.put("kind", "other");
            facts.put("name", relation.getClass().getSimpleName());
        }
        return facts;
    }

    /** A table's name and, when a catalog resolved it, the catalog and the identifier's parts. */
    private static Map<String, Object> v2Facts(NamedRelation relation) {
        Map<String, Object> facts = new LinkedHashMap<>();
        facts.put("name", relation.name());
        if (relation instanceof DataSourceV2Relation v2 && v2.catalog().isDefined() && v2.identifier().isDefined()) {
            Identifier identifier = v2.identifier().get();
            facts.put("catalog", v2.catalog().get().name());
            facts.put("namespace", List.of(identifier.namespace()));
            facts.put("table", identifier.name());
        }
        return facts;
    }

    private static String format(FileFormat format) {
        return format instanceof DataSourceRegister registered ? registered.shortName() : format.toString().toLowerCase();
    }

    private static Object invoke(Object target, String name) throws ReflectiveOperationException {
        return target.getClass().getMethod(name).invoke(target);
    }
}
