"""The file formats golden reads and writes: one reader and one writer per format."""
