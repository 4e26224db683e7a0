//! Shared test helpers.
#![allow(dead_code)]

pub mod elf;
pub mod gpu;
