"""The torch-level recorder behind ``python -m mmaemu.record``: specs (``spec``), the exact torch call of a row
rebuilt from its call object (``tensors``) and the runs on a GPU or on mmaemu itself (``run``).
"""
