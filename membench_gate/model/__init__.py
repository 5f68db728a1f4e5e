"""What the gate reads, writes and decides with — results, baselines, verdicts, the metric registry,
canonical JSON and the file schemas. No I/O.
"""
