"""Names on the event log: its topics and the consumer groups of Lodestar's own consumers."""

MCP = "MetadataChangeProposal_v1"
FAILED_MCP = "FailedMetadataChangeProposal_v1"
MCE = "MetadataChangeEvent_v4"  # DataHub's MCEs (Confluent framing), split into proposals by GMS's MCP consumer
MCL_VERSIONED = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES = "MetadataChangeLog_Timeseries_v1"
PLATFORM_EVENT = "PlatformEvent_v1"  # DataHub's EntityChangeEvents (Confluent framing), for DataHub Actions
ALL = (MCP, FAILED_MCP, MCL_VERSIONED, MCL_TIMESERIES)

MCP_GROUP = "gms-mcp-consumer"  # GMS's MCP consumer
MCL_GROUP = "mcl-processor"  # the MCL processor, the only writer of the read models
PLATFORM_EVENT_GROUP = "platform-events"  # publishes the platform events of the MCLs (mcl_processor/platform_events.py)
MCL_TOPICS = (MCL_VERSIONED, MCL_TIMESERIES)
PROPOSAL_TOPICS = (MCP, MCE)  # what GMS's MCP consumer reads
