"""The REST API of GMS (aiohttp): native routes, DataHub-compatible routes, OpenAPI."""
