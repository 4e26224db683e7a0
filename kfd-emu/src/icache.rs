//! The GPU's instruction cache, as far as it matters to a runtime: code fetched since the last
//! invalidate is cached, so code written afterwards at the same address may not be what runs.
//!
//! A real GPU then runs stale instructions, silently. The emulator keeps, per GPU, the bytes it
//! fetched at each kernel entry since the last invalidate (an `ACQUIRE_MEM` with the
//! instruction-cache action: `SH_ICACHE` on gfx9; on gfx10+ `GLI_INV` with `GL1_INV` and
//! `GL2_INV`, since code reaches the instruction cache through GL1 and GL2); in strict mode, a
//! dispatch whose code no longer matches what was fetched is reported as a stale fetch. Only the
//! first bytes of each entry are compared (a kernel's size is not in its descriptor); the wave
//! interpreter compares the instructions it decodes.

use crate::vm::GpuVm;
use std::collections::HashMap;
use std::sync::Mutex;

/// Bytes compared at each kernel entry.
const WINDOW: u64 = 256;

/// One GPU's instruction-cache model.
#[derive(Default)]
pub(crate) struct InstructionCache {
    /// Kernel entry -> the bytes fetched there since the last invalidate.
    lines: Mutex<HashMap<u64, Vec<u8>>>,
}

impl InstructionCache {
    /// Drops everything (the invalidate action of an `ACQUIRE_MEM`).
    pub(crate) fn invalidate(&self) {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Records a fetch at `entry`; returns `true` if the code there changed since it was first
    /// fetched after the last invalidate (the GPU may run the old instructions).
    pub(crate) fn fetch_is_stale(&self, vm: &GpuVm, entry: u64) -> bool {
        let len = vm
            .mapping_at(entry)
            .map_or(0, |m| (m.start + m.len - entry).min(WINDOW));
        let mut now = vec![0u8; len as usize];
        if len == 0 || vm.read(entry, &mut now).is_err() {
            return false;
        }
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        match lines.get(&entry) {
            Some(seen) => *seen != now,
            None => {
                lines.insert(entry, now);
                false
            }
        }
    }
}
