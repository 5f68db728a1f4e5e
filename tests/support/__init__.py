"""What many test files share, as plain modules (``from tests.support.cli import run_cli``): the CLI
in a real subprocess (cli), the files a test writes (configs), git repositories made in temp folders
(gitrepos, memrepo, gaterepo, attackrepo), the fake GitHub (fakegithub), act (actkit), the sandbox
users of sealed runs (sealkit) and the test adapters (adapters_for_tests). The fixtures built on them
live in tests/conftest.py."""
