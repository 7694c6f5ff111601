"""Report sections, one module each (``sNN_topic.py``, ordered by ``NN``)."""
