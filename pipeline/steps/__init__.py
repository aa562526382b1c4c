"""The outside executor (facts §14): InstructionPackets, the project tree's files per step, and
validate / advance / next / import-step of a step run by an agent against a tree on disk."""
