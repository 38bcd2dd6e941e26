# shellcheck shell=bash
# Pinned versions of the servers fetched from Maven Central by deploy/servers.sh.
# Each can be overridden from the environment for a one-off try (e.g. LODESTAR_KAFKA_VERSION=4.1.2),
# but the pins here are the tested ones.

# Apache Kafka broker (KRaft). 4.4.0 is on Central without its kafka-tools-api jar, so 4.3.x.
KAFKA_VERSION="${LODESTAR_KAFKA_VERSION:-4.3.1}"
# slf4j -> log4j2 binding for the broker; same log4j2 version kafka_2.13 pulls in.
KAFKA_LOG4J_VERSION="${LODESTAR_KAFKA_LOG4J_VERSION:-2.25.4}"

# Apache Cassandra, run from cassandra-all (no 5.x binary tarball is published on Central).
CASSANDRA_VERSION="${LODESTAR_CASSANDRA_VERSION:-5.0.9}"

# OpenSearch 2.x integ-test distribution + modules (2.x runs on Java 17; 3.x needs Java 21).
OPENSEARCH_VERSION="${LODESTAR_OPENSEARCH_VERSION:-2.19.6}"

# The Maven plugin that does the fetching.
MAVEN_DEPENDENCY_PLUGIN_VERSION="3.8.1"
