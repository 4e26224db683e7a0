//! KFD ABI versions and what each brings.
//!
//! `AMDKFD_IOC_GET_VERSION` reports the ABI version of the running driver. A request or a
//! field that a newer header defines means nothing to an older driver: it fails the request
//! (ENOTTY on current kernels, EINVAL on older ones) or ignores the field. Callers check
//! [`KfdVersion::supports`] before relying on a [`Feature`], so that they can say which version
//! is missing instead of passing on an errno.

use core::fmt;

/// A KFD ABI version, as `GET_VERSION` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KfdVersion {
    /// Major version (1 for every KFD so far).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl KfdVersion {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        KfdVersion { major, minor }
    }

    /// The version of the header the bindings were generated from.
    pub const BINDINGS: KfdVersion = KfdVersion::new(
        crate::bindings::GENERATED_FROM_MAJOR,
        crate::bindings::GENERATED_FROM_MINOR,
    );

    /// Whether a driver of this version has `feature`.
    pub const fn supports(self, feature: Feature) -> bool {
        let need = feature.since();
        self.major == need.major && self.minor >= need.minor
    }

    /// Every feature of [`Feature::ALL`] this version has.
    pub fn features(self) -> impl Iterator<Item = Feature> {
        Feature::ALL
            .iter()
            .copied()
            .filter(move |f| self.supports(*f))
    }
}

impl fmt::Display for KfdVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Something a newer KFD ABI brought, with the version that brought it (the version history
/// at the top of `include/uapi/linux/kfd_ioctl.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// `AMDKFD_IOC_SMI_EVENTS`: a descriptor streaming system-management events (1.3).
    SmiEvents,
    /// `AMDKFD_IOC_SVM` and `AMDKFD_IOC_SET_XNACK_MODE`: shared virtual memory (1.5).
    Svm,
    /// `AMDKFD_IOC_CRIU_OP`: checkpoint and restore (1.7).
    Criu,
    /// `AMDKFD_IOC_AVAILABLE_MEMORY`: VRAM still available to the process (1.9).
    AvailableMemory,
    /// `AMDKFD_IOC_EXPORT_DMABUF`: a buffer exported as a dma-buf descriptor (1.12).
    DmabufExport,
    /// `AMDKFD_IOC_RUNTIME_ENABLE` and `AMDKFD_IOC_DBG_TRAP`: the debugger's ABI (1.13).
    Debugger,
    /// `kfd_event_data::signal_event_data`: signal event ages, against lost wake-ups (1.14).
    SignalEventAge,
    /// `KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT`: physically contiguous VRAM (1.16).
    ContiguousVram,
    /// `KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID`: an SDMA queue on a chosen engine (1.17).
    SdmaEngineId,
    /// `kfd_ioctl_set_memory_policy_args::misc_process_flag` (1.18).
    MiscProcessFlags,
}

impl Feature {
    /// Every feature, oldest first.
    pub const ALL: &'static [Feature] = &[
        Feature::SmiEvents,
        Feature::Svm,
        Feature::Criu,
        Feature::AvailableMemory,
        Feature::DmabufExport,
        Feature::Debugger,
        Feature::SignalEventAge,
        Feature::ContiguousVram,
        Feature::SdmaEngineId,
        Feature::MiscProcessFlags,
    ];

    /// The first KFD version with the feature.
    pub const fn since(self) -> KfdVersion {
        KfdVersion::new(
            1,
            match self {
                Feature::SmiEvents => 3,
                Feature::Svm => 5,
                Feature::Criu => 7,
                Feature::AvailableMemory => 9,
                Feature::DmabufExport => 12,
                Feature::Debugger => 13,
                Feature::SignalEventAge => 14,
                Feature::ContiguousVram => 16,
                Feature::SdmaEngineId => 17,
                Feature::MiscProcessFlags => 18,
            },
        )
    }

    /// A short name for logs and reports (`"dma-buf export"`).
    pub const fn name(self) -> &'static str {
        match self {
            Feature::SmiEvents => "SMI events",
            Feature::Svm => "shared virtual memory",
            Feature::Criu => "checkpoint/restore",
            Feature::AvailableMemory => "available-memory query",
            Feature::DmabufExport => "dma-buf export",
            Feature::Debugger => "debugger ABI (runtime enable, debug trap)",
            Feature::SignalEventAge => "signal event ages",
            Feature::ContiguousVram => "contiguous VRAM",
            Feature::SdmaEngineId => "SDMA queue on a chosen engine",
            Feature::MiscProcessFlags => "per-process flags",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (KFD {})", self.name(), self.since())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_gate_features() {
        let debian12 = KfdVersion::new(1, 11);
        assert!(debian12.supports(Feature::AvailableMemory));
        assert!(!debian12.supports(Feature::Debugger));
        assert!(KfdVersion::BINDINGS.supports(Feature::MiscProcessFlags));
        assert_eq!(KfdVersion::BINDINGS.features().count(), Feature::ALL.len());
        assert!(!KfdVersion::new(2, 0).supports(Feature::SmiEvents));
        assert!(KfdVersion::new(1, 13) > debian12);
        assert_eq!(
            Feature::DmabufExport.to_string(),
            "dma-buf export (KFD 1.12)"
        );
        // Feature::ALL is in version order, so `features` lists oldest first.
        assert!(Feature::ALL
            .windows(2)
            .all(|w| w[0].since() <= w[1].since()));
    }
}
