//! aql packets (placeholder, being written).
