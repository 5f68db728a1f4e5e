"""The base commit and what it holds (config, floors, baseline, fixtures), read with git: the only git I/O."""
