"""One module per agent of the chapter pipeline (seed 000 §9.2, DESIGN §4):
draft → summarize → refine → judge (with the gate) → commit → maintain."""
