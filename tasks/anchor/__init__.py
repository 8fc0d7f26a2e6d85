"""ANCHOR: audio-visually grounded chain-of-thought for video QA — whether a
model's reasoning rests on the right moments, objects and sounds, judged by
a panel on answer, hallucination and divergence, plus conciseness, answer
accuracy, modality ablations, direct grounding and difficulty grading."""
