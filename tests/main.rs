//! kfdrt's integration tests, kfdtest-style, as one binary: a module per area (linking one
//! binary instead of one per file is most of what building the suite costs). The tests that
//! need a process of their own stay separate binaries: `fork` (forks the process),
//! `hardware_path` (re-runs itself under the preload), `smi` (counts the process's open files),
//! `suballoc` (changes the environment other tests read) and `log_filter` (installs the
//! process's logger).

mod co_util;
mod common;

mod address_watch;
mod aql;
mod aql_protocol;
mod bad_input;
mod blit_kernels;
mod capture;
mod code_object;
mod code_object_fuzz;
mod code_object_relocs;
mod compiled_kernels;
mod debugger;
mod debugger_remote;
mod debugger_waves;
mod debugging;
mod device_reset;
mod dmabuf;
mod events;
mod eviction;
mod faults;
mod graphics_cs;
mod gws;
mod hang_report;
mod idle_wake;
mod kernel_args;
mod large_copies;
mod layering;
mod leaks;
mod load_kernel;
mod memory;
mod metadata_golden;
mod ordering;
mod oversubscription;
mod ownership;
mod pm4;
mod printf;
mod queue_buffers;
mod queue_priority;
mod sanitizer;
mod scratch;
mod sdma;
mod streams;
mod stress;
mod strict;
mod svm;
mod topology;
mod trace;
mod wave_exceptions;
