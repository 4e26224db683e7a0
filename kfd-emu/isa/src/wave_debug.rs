//! The debugger's hardware controls over a dispatch's waves ([`WaveDebug`]): the trap-mask
//! override the SPI applies at launch, and the address watches TCP checks on every
//! vector-memory access.

/// What an attached debugger asked of the waves, as KFD programs it into the hardware: the
/// trap-mask override (`KFD_DBG_TRAP_MASK_*`, which the SPI applies to every wave it launches)
/// and the address watches (`TCP_WATCH0..3`).
///
/// A watch hit sets the watch's `TRAPSTS` bit (`ADDR_WATCH` for watch 0, `EXCP_HI` bits for
/// 1-3) and, when the mask enables address-watch traps, enters the trap handler after the
/// instruction: always precisely (the emulator finishes every access before the next
/// instruction), which hardware without `KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP` only does sometimes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaveDebug {
    /// `KFD_DBG_TRAP_MASK_*` bits in force.
    pub trap_mask: u32,
    /// The watches, by watch id.
    pub watches: [Option<AddressWatch>; 4],
}

impl WaveDebug {
    /// `KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH`.
    pub const ADDRESS_WATCH: u32 = 1 << 7;
    /// `KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_START`.
    pub const WAVE_START: u32 = 1 << 30;
    /// `KFD_DBG_TRAP_MASK_TRAP_ON_WAVE_END`.
    pub const WAVE_END: u32 = 1 << 31;

    /// The `TRAPSTS` bits of the watches an access of kind `class` to `[address, address +
    /// bytes)` hits.
    pub fn hits(&self, address: u64, bytes: u64, class: WatchAccess) -> u32 {
        let mut bits = 0;
        for (id, w) in self.watches.iter().enumerate() {
            let Some(w) = w else { continue };
            if w.mode.catches(class) && w.covers(address, bytes) {
                bits |= match id {
                    0 => 1 << 7,
                    n => 1 << (11 + n),
                };
            }
        }
        bits
    }
}

/// One hardware address watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressWatch {
    /// The watched address.
    pub address: u64,
    /// The address bits compared: an access hits when `access & mask == address` for its
    /// first or last byte (an access never spans more than one step of the lowest compared bit).
    pub mask: u64,
    /// Which accesses it catches.
    pub mode: WatchMode,
}

impl AddressWatch {
    fn covers(&self, address: u64, bytes: u64) -> bool {
        // The TCP compares the masked access with the programmed address as it is: a watch
        // address with a bit set where the mask has none never hits, as on the hardware.
        let first = address & self.mask;
        let last = address.wrapping_add(bytes.max(1) - 1) & self.mask;
        first == self.address || last == self.address
    }
}

/// `KFD_DBG_TRAP_ADDRESS_WATCH_MODE_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    /// Loads.
    Read,
    /// Stores and atomics.
    NonRead,
    /// Atomics.
    Atomic,
    /// Everything.
    All,
}

/// What a vector-memory access is, for the watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchAccess {
    /// A load.
    Load,
    /// A store.
    Store,
    /// An atomic.
    Atomic,
}

impl WatchMode {
    fn catches(self, a: WatchAccess) -> bool {
        match self {
            WatchMode::Read => a == WatchAccess::Load,
            WatchMode::NonRead => a != WatchAccess::Load,
            WatchMode::Atomic => a == WatchAccess::Atomic,
            WatchMode::All => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(address: u64, mask: u64, mode: WatchMode) -> WaveDebug {
        WaveDebug {
            trap_mask: 0,
            watches: [
                None,
                None,
                Some(AddressWatch {
                    address,
                    mask,
                    mode,
                }),
                None,
            ],
        }
    }

    #[test]
    fn a_watch_compares_the_masked_bits_of_every_byte_touched() {
        // MI200: bits 6..=29 as the mask says, everything above always, nothing below.
        let mask = 0xFFFF_C000_0000 | 0x3FFF_FFC0;
        let d = watch(0x7F00_1000_0040, mask, WatchMode::All);
        let id2 = 1 << 13;
        assert_eq!(d.hits(0x7F00_1000_0040, 4, WatchAccess::Store), id2);
        assert_eq!(
            d.hits(0x7F00_1000_007C, 4, WatchAccess::Load),
            id2,
            "same 64-byte block"
        );
        assert_eq!(
            d.hits(0x7F00_1000_003E, 4, WatchAccess::Load),
            id2,
            "straddles into it"
        );
        assert_eq!(d.hits(0x7F00_1000_0080, 4, WatchAccess::Load), 0);
        assert_eq!(
            d.hits(0x7E00_1000_0040, 4, WatchAccess::Load),
            0,
            "high bits differ"
        );
        // A mask without bit 12 ignores it.
        let d = watch(
            0x1000_0000,
            0xFFFF_C000_0000 | (0x3FFF_FFC0 & !0x1000),
            WatchMode::All,
        );
        assert_eq!(d.hits(0x1000_1000, 4, WatchAccess::Load), id2);
    }

    #[test]
    fn each_mode_catches_its_accesses() {
        let mask = u64::MAX << 6;
        for (mode, load, store, atomic) in [
            (WatchMode::Read, true, false, false),
            (WatchMode::NonRead, false, true, true),
            (WatchMode::Atomic, false, false, true),
            (WatchMode::All, true, true, true),
        ] {
            let d = watch(0x4000, mask, mode);
            let got = |a| d.hits(0x4000, 8, a) != 0;
            assert_eq!(
                (
                    got(WatchAccess::Load),
                    got(WatchAccess::Store),
                    got(WatchAccess::Atomic)
                ),
                (load, store, atomic),
                "{mode:?}"
            );
        }
        let mut d = watch(0x4000, mask, WatchMode::All);
        d.watches[0] = d.watches[2];
        assert_eq!(d.hits(0x4000, 4, WatchAccess::Load), 1 << 7 | 1 << 13);
    }
}
