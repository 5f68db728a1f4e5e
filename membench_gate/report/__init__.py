"""Verdict → findings in words → terminal and Markdown (Jinja2 templates); escaping once."""
