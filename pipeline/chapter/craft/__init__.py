"""Deterministic craft lints over chapter text (issue #17 §2): pure functions, no ORM.

``lints.lint_text`` runs the fixed catalogue of ``catalogue.RULES`` and ``indicators.indicators``
computes the 13 anti-AI indicators of facts §13.
"""
