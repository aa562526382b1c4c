"""NOVEL_ASK (seed 003, facts §14): the question and answer specs (spec), and the questions a
run waits at until a person answers (answers)."""
