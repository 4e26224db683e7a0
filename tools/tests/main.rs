//! The tools' tests, as one binary (see kfdrt's `tests/main.rs`).

mod check;
mod smoke;
