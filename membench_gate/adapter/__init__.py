"""The process boundary, both sides: the adapter types, the JSON-RPC client and process, the Python
host, and how the adapter's process is started (sealed or not).
"""
