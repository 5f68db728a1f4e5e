"""Config + fixtures + adapter → results: the runner, shards and their merge, re-derivation, the
determinism check, the base's invariants.
"""
