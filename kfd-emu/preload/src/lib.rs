//! `libkfd_emu_preload.so`: runs unmodified ROCm user space on kfd-emu.
//!
//! Loaded with `LD_PRELOAD`, it overrides the C library functions through which ROCr
//! (`libhsa-runtime64`), libhsakmt, libdrm and ROCm tools reach the GPU driver, and serves
//! them from an [`kfd_emu::Emulator`] running inside the process:
//!
//! - `/dev/kfd` and `/dev/dri/renderD<128+i>` open as device descriptors whose `ioctl`, `mmap`,
//!   `fstat`/`statx`, `fcntl(F_DUPFD*)`/`dup` and `close` go to the emulator (KFD ioctls, the
//!   render node's DRM version and amdgpu info queries, buffer/doorbell/MMIO mappings); as on
//!   the real driver, `read`/`write` fail with EINVAL, and a descriptor used by a forked child
//!   that did not open it gets EBADF (a child that opens `/dev/kfd` itself gets an emulator of
//!   its own);
//! - the KFD topology tree (`/sys/devices/virtual/kfd`, `/sys/class/kfd`), the render nodes'
//!   `/sys/dev/char/226:*` and `/sys/class/drm/renderD*` entries, the GPUs' PCI devices at the
//!   bus addresses the topology gives (`/sys/bus/pci/devices/<bdf>`: ids, class, NUMA node,
//!   local CPUs, link, configuration header; listed in `/sys/bus/pci/devices` beside the host's
//!   own devices from the first look, as a GPU is there from boot) and `/sys/module/amdgpu` are
//!   served from files written once into a private temporary directory, by rewriting paths in
//!   `open`/`openat`/`fopen`/`opendir`/`stat`/`access`/`realpath`/`readlink` (so `readdir`,
//!   `fscanf` and friends work unchanged on real directory streams and files);
//! - `popen("lsmod ...")` reports the amdgpu module loaded.
//!
//! - `munmap` and `mprotect` tell the emulator first, as the kernel's MMU notifier tells the
//!   driver: SVM ranges follow the process's memory (unmapped ranges leave the GPUs, read-only
//!   pages map read-only), and device mappings stop being watched.
//!
//! glibc's internal opens (inside `fopen`, `opendir`) and its internal `munmap` (inside `free`)
//! are not interposable, which is why those functions are overridden themselves (the emulator
//! notices the unmappings later, see its docs). Nothing else in the process changes: every
//! other call is forwarded to the C library (`dlsym(RTLD_NEXT)`).
//!
//! Configuration is by environment: `KFDRT_EMU_PRESET` (default `gfx90a`, the one ROCr 5.2.3
//! knows), `KFDRT_EMU_GPUS` (default 1) and `KFDRT_EMU_LOG` (default `warn`; unsupported ioctls are
//! logged at `warn`, every emulated call at `debug`).
//!
//! ```text
//! cargo build -p kfd-emu-preload
//! LD_PRELOAD=target/debug/libkfd_emu_preload.so rocminfo
//! ```
#![warn(missing_docs)]
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod command;
mod fds;
mod hooks;
mod logger;
mod real;
mod state;

pub use command::{pclose, popen};
pub use hooks::*;
pub use logger::LOG_ENV;
