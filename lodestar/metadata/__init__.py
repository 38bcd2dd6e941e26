"""CDAP-style business and system metadata on the MCP/MCL core: metadata entities and their
URNs, USER and SYSTEM scopes, CDAP's validation, and change records."""
