//! Descriptors of emulated device files.
//!
//! Each open of `/dev/kfd` or an emulated `/dev/dri/renderD<minor>` gets a real descriptor (an
//! empty memfd, so the number is the process's own and `close`, `dup` and `poll` behave) recorded
//! here with the device it stands for. The table is a fixed array of atomics so that the common
//! case, a call on some other descriptor, costs one load.

use kfd_sys::Node;
use std::sync::atomic::{AtomicU32, Ordering};

/// Descriptors above this are never emulated devices (opens that would need one fail EMFILE).
pub(crate) const MAX_FAKE_FD: usize = 4096;

const NONE: u32 = 0;
const KFD: u32 = 1;
/// `RENDER_BASE + minor` for render nodes.
const RENDER_BASE: u32 = 0x1_0000;

static TABLE: [AtomicU32; MAX_FAKE_FD] = [const { AtomicU32::new(NONE) }; MAX_FAKE_FD];

fn encode(node: Node) -> u32 {
    match node {
        Node::Kfd => KFD,
        Node::Render(minor) => RENDER_BASE + minor,
    }
}

fn decode(v: u32) -> Option<Node> {
    match v {
        NONE => None,
        KFD => Some(Node::Kfd),
        v => Some(Node::Render(v - RENDER_BASE)),
    }
}

/// The device `fd` stands for, if it is one of ours.
pub(crate) fn lookup(fd: i32) -> Option<Node> {
    let slot = TABLE.get(usize::try_from(fd).ok()?)?;
    decode(slot.load(Ordering::Acquire))
}

/// Records `fd` as a descriptor of `node`; false if `fd` is too large to track.
pub(crate) fn insert(fd: i32, node: Node) -> bool {
    match usize::try_from(fd).ok().and_then(|i| TABLE.get(i)) {
        Some(slot) => {
            slot.store(encode(node), Ordering::Release);
            true
        }
        None => false,
    }
}

/// Forgets `fd` (it is being closed or replaced); returns what it was.
pub(crate) fn remove(fd: i32) -> Option<Node> {
    let slot = TABLE.get(usize::try_from(fd).ok()?)?;
    decode(slot.swap(NONE, Ordering::AcqRel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        assert_eq!(lookup(4000), None);
        assert!(insert(4000, Node::Render(129)));
        assert_eq!(lookup(4000), Some(Node::Render(129)));
        assert_eq!(remove(4000), Some(Node::Render(129)));
        assert_eq!(lookup(4000), None);
        assert!(insert(4001, Node::Kfd));
        assert_eq!(remove(4001), Some(Node::Kfd));
        assert!(!insert(MAX_FAKE_FD as i32, Node::Kfd));
        assert_eq!(lookup(-1), None);
    }
}
