//! kfdrt's integration tests, kfdtest-style, as one binary: a module per area (linking one
//! binary instead of one per file is most of what building the suite costs). The few tests
//! that need a process of their own (one forks, one counts the process's open files, one
//! changes the environment other tests read, one installs the process's logger, one runs under
//! the preload) re-run this binary filtered to themselves (`common::own_process`).

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
mod fork;
mod graphics_cs;
mod gws;
mod hang_report;
mod hardware_path;
mod idle_wake;
mod kernel_args;
mod large_copies;
mod layering;
mod leaks;
mod load_kernel;
mod log_filter;
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
mod smi;
mod streams;
mod stress;
mod strict;
mod suballoc;
mod svm;
mod topology;
mod trace;
mod wave_exceptions;
