"""`captrack run`: experiment manifests (``experiment``) and the staged, resumable runner (``runner``)."""
