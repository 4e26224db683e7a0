//! sdma packets (placeholder, being written).
