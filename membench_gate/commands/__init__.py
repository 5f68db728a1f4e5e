"""One module per subcommand: its arguments' orchestration, no rules."""
