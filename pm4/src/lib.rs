//! pm4 packets (placeholder, being written).
