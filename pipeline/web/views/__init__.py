"""Server-rendered pipeline pages (templates/pipeline/): dashboard and live progress, gates and
plans, runs and prompt receipts. Story pages are in projects/views/."""
