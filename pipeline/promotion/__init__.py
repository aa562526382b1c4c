"""Promotion posts for a chapter, a range of chapters or a volume: the blackboard workflow of seed
001 (hook variants → best hook → sensitive filter → body → virality scores → CTA → hashtags →
platform versions), run on the queue like any other run (``promotion_start`` in ``promotion/run.py``)."""
