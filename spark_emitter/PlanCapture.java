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
 * Reads what Lodestar's Spark listener needs of one finished action inside the JVM, so that the
 * listener pays one Py4J round trip per action instead of one per fact. Compiled from this source
 * by the driver JVM's own compiler when the listener attaches (spark_emitter/capture_compiled.py).
 *
 * <p>{@link #capture} answers the analyzed plan's node name and, for a write Lodestar records,
 * writes one JSON object to the reader's file: {"plan": the pre-order node list (TreeNode.toJSON),
 * "facts": {"executionId", "write", "relations"}}, as spark_emitter/capture.py's Plan describes
 * them (relations keyed by the first output exprId, as a string).
 */
public final class PlanCapture {
    private final ObjectMapper mapper = new ObjectMapper().disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
    private final Path path;
    private final Set<String> writes;
    private final Set<String> v2Writes;
    private final Set<String> queryField;

    /** Plans are written to `path`; the node names are capture.py's WRITES, V2_WRITES and QUERY_FIELD. */
    public PlanCapture(String path, String[] writes, String[] v2Writes, String[] queryField) {
        this.path = Path.of(path);
        this.writes = Set.of(writes);
        this.v2Writes = Set.of(v2Writes);
        this.queryField = Set.of(queryField);
    }

    /** The analyzed plan's node name; for a write in `writes`, its facts are in the file. */
    public String capture(QueryExecution execution) throws IOException, ReflectiveOperationException {
        LogicalPlan plan = execution.analyzed();
        String command = plan.nodeName();
        if (!writes.contains(command)) {
            return command;
        }
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
        facts.put("executionId", execution.id());
        facts.put("write", write);
        facts.put("relations", relationFacts(queryField.contains(command) ? query : plan));
        try (Writer out = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
            out.write("{\"plan\":");
            out.write(plan.toJSON());  // (the JSON tree itself, jsonValue, is private)
            out.write(",\"facts\":");
            mapper.writeValue(out, facts);
            out.write("}");
        }
        return command;
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
