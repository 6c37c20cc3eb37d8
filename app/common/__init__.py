"""What every layer shares, and nothing of any layer: errors and their shapes, the caller's identity, the one
redaction point and the log line it guards, the worker pool for work sized by input, strict JSON, token counts,
schema checks on RE2, tracing's seam, and returning freed memory to the system."""
