"""VidPair-Halluc: background-controlled video pairs for hallucination
evaluation (task pack; see README.md)."""
