"""HAVE-Bench (CVPR 2026): omni models on images + audio, by level
(perception, reasoning, interaction) and audio role (audio as instruction,
audio as context); interaction items are task graphs walked turn by turn,
each edge judged by an LLM.  No code or data is public upstream: the item
schema is avhb's (``schema/items.schema.json``, README)."""
