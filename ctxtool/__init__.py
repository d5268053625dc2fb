"""ctxtool: offline toolkit for LLM agent session transcripts."""

__version__ = "0.1.0"
