//! What kfdrt's tools (`kfdrt-bench`, `kfdrt-check`) share: the description of the machine a
//! run measured or tested on, printed first and kept in the JSON, so two runs can be compared.

#![forbid(unsafe_code)]

pub mod machine;
