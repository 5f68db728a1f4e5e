"""The gate's rules: ``decide()`` and the justification check. Pure: no git, no GitHub, no files, no clock."""
