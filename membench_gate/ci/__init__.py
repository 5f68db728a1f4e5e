"""GitHub Actions: settings read once from the environment, workflow commands and runner files, the
GitHub API, the action's step and the sandbox the pull request's code runs in.
"""
