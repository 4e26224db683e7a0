//! Global wave sync (GWS): a GPU's 64 hardware semaphores and barriers that waves of any
//! work-group and any queue reach through the `ds_gws_*` instructions (with the `gds` bit).
//!
//! The resource an instruction names is its `offset0` plus `M0[21:16]`, modulo 64, as the GCN
//! and CDNA ISA guides define it. Semaphores are modelled: `ds_gws_init` sets a resource's
//! count from the first active lane's data, `ds_gws_sema_v` adds one, `ds_gws_sema_br` adds
//! the data, and `ds_gws_sema_p` waits until the count is positive and takes one (the wave
//! stalls on the instruction, letting other waves run, until it can). The barrier and
//! `ds_gws_sema_release_all` are decoded but stop the wave as unimplemented.

use std::sync::atomic::{AtomicU32, Ordering};

/// Resources per GPU.
pub const GWS_RESOURCES: usize = 64;

/// One GPU's GWS resources, shared by every dispatch of every queue that holds them.
#[derive(Debug)]
pub struct Gws {
    counts: [AtomicU32; GWS_RESOURCES],
}

impl Default for Gws {
    fn default() -> Gws {
        Gws {
            counts: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }
}

impl Gws {
    /// Sets resource `id`'s count (`ds_gws_init`).
    pub fn init(&self, id: usize, count: u32) {
        self.counts[id % GWS_RESOURCES].store(count, Ordering::Release);
    }

    /// Adds `n` to resource `id`'s count (`ds_gws_sema_v`, `ds_gws_sema_br`).
    pub fn release(&self, id: usize, n: u32) {
        self.counts[id % GWS_RESOURCES].fetch_add(n, Ordering::AcqRel);
    }

    /// Takes one from resource `id`'s count if it is positive (`ds_gws_sema_p`); `false` means
    /// the wave must wait and try again.
    pub fn try_acquire(&self, id: usize) -> bool {
        self.counts[id % GWS_RESOURCES]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_sub(1))
            .is_ok()
    }

    /// Resource `id`'s count.
    pub fn count(&self, id: usize) -> u32 {
        self.counts[id % GWS_RESOURCES].load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_semaphore_hands_out_what_it_was_given() {
        let g = Gws::default();
        assert!(!g.try_acquire(3), "a resource starts at 0");
        g.init(3, 1);
        assert!(g.try_acquire(3));
        assert!(!g.try_acquire(3));
        g.release(3, 2);
        assert_eq!(g.count(3), 2);
        assert_eq!(g.count(3 + GWS_RESOURCES), 2, "ids wrap at 64");
    }

    #[test]
    fn the_data_register_sits_in_the_address_field() {
        use crate::{decode::decode, disasm::disassemble, Target};
        // llvm-mc-16 --show-encoding (gfx908; gfx90a wants an even register).
        let inst = decode(Target::Gfx90a, &[0xD933_0003, 0x0000_0004]);
        assert_eq!(
            disassemble(Target::Gfx90a, &inst),
            "ds_gws_init v4 offset:3 gds"
        );
    }
}
