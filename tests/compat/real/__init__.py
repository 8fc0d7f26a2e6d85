"""Differentials over the peers' real task folders, as shipped:
synthetic data in the real Hub repos' layouts served by the suite's FakeHub,
both tools run against one logging scripted model, compared row by row."""
