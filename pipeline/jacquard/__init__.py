"""Jacquard: the prompt templating and LLM-output (Filament) layer of the pipeline (seed 004)."""
