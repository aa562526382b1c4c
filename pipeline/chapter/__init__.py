"""One chapter's life in the pipeline: what its stages know (context, memory, recall, the book
bible), the stages themselves (stages/), the checks and lints they run (checks, evidence,
lint, craft/, story_checks/), the quality gate and the platform's rules, a person's pause."""
