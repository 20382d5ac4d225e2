"""A package only so that wheels ship the module beside it; `evaluate.load` reads that file by path."""
