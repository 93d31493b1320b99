"""The asyncio client: airlock.AsyncClient."""
# gen.py writes airlock/_sync, the blocking client, from this package:
# edit here (and _backend.py on both sides), then run sdk/python/gen.py.
