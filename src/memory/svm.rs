//! Shared virtual memory (`AMDKFD_IOC_SVM`, KFD 1.5): the process's own memory (malloc'd,
//! mmapped) made reachable by GPUs at its own address, with attributes that say where it should
//! live and which GPUs may touch it. See `include/uapi/linux/kfd_ioctl.h` (`kfd_ioctl_svm_*`).
//!
//! With XNACK off (the default on every part kfdrt knows), a GPU may only touch a range it was
//! given [`SvmAttribute::Access`] to; anything else is a GPU page fault.

use crate::error::{Error, Result};
use crate::{Gpu, Kfd};
use kfd_sys::bindings::*;
use kfd_sys::ioctl::IoctlRequest;
use kfd_sys::{Feature, Node};

/// Where SVM memory should be (a location attribute's value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SvmLocation {
    /// System memory.
    System,
    /// The VRAM of the GPU with this KFD id.
    Gpu(u32),
    /// No preference (or, in a query, ranges that disagree).
    Undefined,
}

impl SvmLocation {
    fn raw(self) -> u32 {
        match self {
            SvmLocation::System => KFD_IOCTL_SVM_LOCATION_SYSMEM,
            SvmLocation::Gpu(id) => id,
            SvmLocation::Undefined => KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        }
    }

    fn from_raw(v: u32) -> SvmLocation {
        match v {
            KFD_IOCTL_SVM_LOCATION_SYSMEM => SvmLocation::System,
            KFD_IOCTL_SVM_LOCATION_UNDEFINED => SvmLocation::Undefined,
            id => SvmLocation::Gpu(id),
        }
    }
}

/// One attribute to set on a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SvmAttribute {
    /// Where the memory should normally live.
    PreferredLocation(SvmLocation),
    /// Move the memory there now.
    PrefetchLocation(SvmLocation),
    /// The GPU with this id may access it (mapped, migrating as needed).
    Access(u32),
    /// The GPU may access it where it is, without migration.
    AccessInPlace(u32),
    /// The GPU may not access it.
    NoAccess(u32),
    /// `KFD_IOCTL_SVM_FLAG_*` bits to set.
    SetFlags(u32),
    /// `KFD_IOCTL_SVM_FLAG_*` bits to clear.
    ClearFlags(u32),
    /// Migration granularity, log2 of pages.
    Granularity(u8),
}

impl SvmAttribute {
    fn raw(self) -> kfd_ioctl_svm_attribute {
        let (type_, value) = match self {
            SvmAttribute::PreferredLocation(l) => (KFD_IOCTL_SVM_ATTR_PREFERRED_LOC, l.raw()),
            SvmAttribute::PrefetchLocation(l) => (KFD_IOCTL_SVM_ATTR_PREFETCH_LOC, l.raw()),
            SvmAttribute::Access(g) => (KFD_IOCTL_SVM_ATTR_ACCESS, g),
            SvmAttribute::AccessInPlace(g) => (KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, g),
            SvmAttribute::NoAccess(g) => (KFD_IOCTL_SVM_ATTR_NO_ACCESS, g),
            SvmAttribute::SetFlags(f) => (KFD_IOCTL_SVM_ATTR_SET_FLAGS, f),
            SvmAttribute::ClearFlags(f) => (KFD_IOCTL_SVM_ATTR_CLR_FLAGS, f),
            SvmAttribute::Granularity(g) => (KFD_IOCTL_SVM_ATTR_GRANULARITY, u32::from(g)),
        };
        kfd_ioctl_svm_attribute { type_, value }
    }
}

/// How a GPU may reach a range (a query's answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SvmAccess {
    /// Mapped, migrating as needed.
    Access,
    /// Mapped where the memory is.
    InPlace,
    /// Not mapped (for some or all of the span).
    None,
}

/// The attributes of a span, merged over its ranges as the driver reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SvmAttributes {
    /// Preferred location ([`SvmLocation::Undefined`] where ranges disagree).
    pub preferred: SvmLocation,
    /// Last prefetch location.
    pub prefetch: SvmLocation,
    /// Flags every range has.
    pub flags: u32,
    /// Smallest granularity.
    pub granularity: u32,
    /// Access of each GPU asked about, by KFD id.
    pub access: Vec<(u32, SvmAccess)>,
}

const HEADER: usize = std::mem::size_of::<kfd_ioctl_svm_args>();
const ATTR: usize = std::mem::size_of::<kfd_ioctl_svm_attribute>();

impl Kfd {
    fn svm_check(&self, gpus: impl IntoIterator<Item = u32>) -> Result<()> {
        self.shared.dev.require(Feature::Svm)?;
        for id in gpus {
            let Some(g) = self.gpu_by_id(id) else {
                return Err(Error::NoSuchGpuId { gpu_id: id });
            };
            if !g.info().supports_svm() {
                return Err(Error::Unsupported(format!(
                    "GPU {id:#x} does not take shared virtual memory (no HSA_CAP_SVMAPI_SUPPORTED)"
                )));
            }
        }
        Ok(())
    }

    /// `AMDKFD_IOC_SVM` with `op` on `addr..addr + len` and `attrs`, returning the attributes
    /// as the driver left them.
    fn svm_ioctl(
        &self,
        op: u32,
        addr: u64,
        len: u64,
        attrs: &[kfd_ioctl_svm_attribute],
    ) -> Result<Vec<kfd_ioctl_svm_attribute>> {
        // The struct, then the attributes; the request's size covers both (as libhsakmt does).
        let words = (HEADER + ATTR * attrs.len()).div_ceil(8);
        let mut buf = vec![0u64; words];
        let size_bits_max = (1usize << 14) - 1;
        let too_many = || Error::TooLarge {
            what: "SVM attributes in one request",
            requested: attrs.len() as u64,
            limit: ((size_bits_max - HEADER) / ATTR) as u64,
        };
        let head = kfd_ioctl_svm_args {
            start_addr: addr,
            size: len,
            op,
            nattr: u32::try_from(attrs.len()).map_err(|_| too_many())?,
            ..Default::default()
        };
        let bytes = HEADER + ATTR * attrs.len();
        if bytes > size_bits_max {
            return Err(too_many());
        }
        // SAFETY: `buf` holds `bytes` bytes, 8-aligned: the header and then the attributes.
        unsafe {
            std::ptr::write(buf.as_mut_ptr().cast::<kfd_ioctl_svm_args>(), head);
            let at = buf
                .as_mut_ptr()
                .cast::<u8>()
                .add(HEADER)
                .cast::<kfd_ioctl_svm_attribute>();
            std::ptr::copy_nonoverlapping(attrs.as_ptr(), at, attrs.len());
        }
        let request = IoctlRequest::iowr(b'K', 0x20, bytes);
        // SAFETY: the argument is `bytes` long as the request says; the range's memory is the
        // caller's business (see `svm_set_attributes`), the driver only records and maps it.
        unsafe {
            self.driver()
                .ioctl(Node::Kfd, request, buf.as_mut_ptr().cast())
        }
        .map_err(|errno| Error::Driver {
            op: "AMDKFD_IOC_SVM",
            errno,
        })?;
        let mut out = vec![kfd_ioctl_svm_attribute::default(); attrs.len()];
        // SAFETY: reading back the attributes written above, same layout.
        unsafe {
            let at = buf
                .as_ptr()
                .cast::<u8>()
                .add(HEADER)
                .cast::<kfd_ioctl_svm_attribute>();
            std::ptr::copy_nonoverlapping(at, out.as_mut_ptr(), attrs.len());
        }
        Ok(out)
    }

    /// Sets `attrs` on the process memory `addr..addr + len` (page aligned, mapped, and not
    /// a KFD buffer): a GPU given [`SvmAttribute::Access`] then reads and writes it at `addr`.
    ///
    /// # Safety
    /// GPUs given access will read and write the memory as the work submitted to them says:
    /// it must stay mapped for as long as any GPU has access to it (take access away with
    /// [`SvmAttribute::NoAccess`] before unmapping it), and Rust references to it must not
    /// be alive while GPU work writes it.
    pub unsafe fn svm_set_attributes(
        &self,
        addr: u64,
        len: u64,
        attrs: &[SvmAttribute],
    ) -> Result<()> {
        self.svm_check(attrs.iter().filter_map(|a| match a {
            SvmAttribute::Access(g) | SvmAttribute::AccessInPlace(g) => Some(*g),
            _ => None,
        }))?;
        let raw: Vec<_> = attrs.iter().map(|a| a.raw()).collect();
        self.svm_ioctl(KFD_IOCTL_SVM_OP_SET_ATTR, addr, len, &raw)
            .map(drop)
    }

    /// The attributes of `addr..addr + len` (defaults where nothing was set), with the access
    /// of each of `gpus`.
    pub fn svm_attributes(&self, addr: u64, len: u64, gpus: &[&Gpu]) -> Result<SvmAttributes> {
        self.svm_check(gpus.iter().map(|g| g.id()))?;
        let mut q = vec![
            kfd_ioctl_svm_attribute {
                type_: KFD_IOCTL_SVM_ATTR_PREFERRED_LOC,
                value: 0,
            },
            kfd_ioctl_svm_attribute {
                type_: KFD_IOCTL_SVM_ATTR_PREFETCH_LOC,
                value: 0,
            },
            kfd_ioctl_svm_attribute {
                type_: KFD_IOCTL_SVM_ATTR_SET_FLAGS,
                value: 0,
            },
            kfd_ioctl_svm_attribute {
                type_: KFD_IOCTL_SVM_ATTR_GRANULARITY,
                value: 0,
            },
        ];
        q.extend(gpus.iter().map(|g| kfd_ioctl_svm_attribute {
            type_: KFD_IOCTL_SVM_ATTR_ACCESS,
            value: g.id(),
        }));
        let r = self.svm_ioctl(KFD_IOCTL_SVM_OP_GET_ATTR, addr, len, &q)?;
        let access = r[4..]
            .iter()
            .zip(gpus)
            .map(|(a, g)| {
                let how = match a.type_ {
                    KFD_IOCTL_SVM_ATTR_ACCESS => SvmAccess::Access,
                    KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => SvmAccess::InPlace,
                    _ => SvmAccess::None,
                };
                (g.id(), how)
            })
            .collect();
        Ok(SvmAttributes {
            preferred: SvmLocation::from_raw(r[0].value),
            prefetch: SvmLocation::from_raw(r[1].value),
            flags: r[2].value,
            granularity: r[3].value,
            access,
        })
    }
}
