"""NUM1xx: the log / exp / softmax family."""
