"""Runs that move the book rather than one chapter: the orchestrator (what comes next), the quick
start, a volume's planning and its review, a chapter's rewrite, the style analyst."""
