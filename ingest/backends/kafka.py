"""What Kafka's errors mean for the adapters on it (see ingest.backends.errors)."""

from __future__ import annotations

from confluent_kafka import KafkaError

from ingest.backends.errors import BackendError, BackendFailure, BackendUnavailable

#: Refusals that no retry mends: the client lacks a grant or its credentials are wrong.
_REFUSED = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION})


def backend_error(message: str, err: object = None) -> BackendError:
    """A Kafka failure, described by `message` (which names the cluster and what failed), as a
    backend error: BackendFailure when Kafka refused the client (authorization, authentication;
    `err` is the KafkaError, if any), else BackendUnavailable (brokers down or unreachable,
    timeouts, leaders moving, a producer fenced, a group rebalancing)."""
    refused = isinstance(err, KafkaError) and err.code() in _REFUSED
    return (BackendFailure if refused else BackendUnavailable)(message)
