"""MMLongCite: are a long-context VLM's statements supported by the context
units it cites?  Pages, images, interleaved text and video frames (8K-128K
tokens), leave-one-out citation scoring by an image-seeing judge, length
buckets, MMLongCite-HR stitched grids, an error taxonomy, and the context
builder (``avhb mmlongcite-build``)."""
