"""CURVE (released upstream as Minerva-cultural): cultural, native-language
long-video reasoning in 18 locales, scored by a 0/1/2 judge, with an
evidence-graph diagnosis of where a model's reasoning breaks."""
