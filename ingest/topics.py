"""Names of the event-log topics."""

MCP = "MetadataChangeProposal_v1"
FAILED_MCP = "FailedMetadataChangeProposal_v1"
MCL_VERSIONED = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES = "MetadataChangeLog_Timeseries_v1"
ALL = (MCP, FAILED_MCP, MCL_VERSIONED, MCL_TIMESERIES)
