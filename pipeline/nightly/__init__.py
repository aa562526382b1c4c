"""Nightly batches and spending: the autopilot, the cost caps, how a batch ends, the morning summary."""
