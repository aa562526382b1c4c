"""Platform profiles and genre (issue #17 §1): the built-in data for qidian, fanqie, jinjiang and
general (``data/``), its loader and checks (``profiles``), and what the rest of the code reads
from a project (``limits``: word range, readability, information load, hook policy, weights,
golden-chapter gates). Kept in ``projects`` so that both apps can use it."""
