//! Descriptors of emulated device files.
//!
//! Each open of `/dev/kfd` or an emulated `/dev/dri/renderD<minor>` gets a real descriptor (an
//! empty memfd, so the number is the process's own and `close`, `dup` and `poll` behave) recorded
//! here with the device it stands for, the process that opened it and the memfd's inode. The
//! table is a fixed array of atomics so that the common case, a call on some other descriptor,
//! costs one load. The inode lets a caller notice an entry gone stale because the descriptor was
//! closed behind the interposer's back (`close_range`, `syscall(SYS_close)`, glibc-internal
//! closes) and the number reused.

use kfd_sys::Node;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Descriptors above this are never emulated devices (opens that would need one fail EMFILE).
pub(crate) const MAX_FAKE_FD: usize = 4096;

const NONE: u32 = 0;
const KFD: u32 = 1;
/// `RENDER_BASE + minor` for render nodes.
const RENDER_BASE: u32 = 0x1_0000;

static KINDS: [AtomicU32; MAX_FAKE_FD] = [const { AtomicU32::new(NONE) }; MAX_FAKE_FD];
static OPENERS: [AtomicU32; MAX_FAKE_FD] = [const { AtomicU32::new(0) }; MAX_FAKE_FD];
static INODES: [AtomicU64; MAX_FAKE_FD] = [const { AtomicU64::new(0) }; MAX_FAKE_FD];

/// What a device descriptor stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) node: Node,
    /// The process that opened the device (a forked child inherits the descriptor only).
    pub(crate) opener: u32,
    /// Inode of the memfd standing in for the device.
    pub(crate) inode: u64,
}

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

fn index(fd: i32) -> Option<usize> {
    usize::try_from(fd).ok().filter(|&i| i < MAX_FAKE_FD)
}

/// The entry of `fd`, if it is one of ours.
pub(crate) fn lookup(fd: i32) -> Option<Entry> {
    let i = index(fd)?;
    let node = decode(KINDS[i].load(Ordering::Acquire))?;
    Some(Entry {
        node,
        opener: OPENERS[i].load(Ordering::Relaxed),
        inode: INODES[i].load(Ordering::Relaxed),
    })
}

/// Records `fd` as a descriptor of `entry.node`; false if `fd` is too large to track.
pub(crate) fn insert(fd: i32, entry: Entry) -> bool {
    let Some(i) = index(fd) else {
        return false;
    };
    OPENERS[i].store(entry.opener, Ordering::Relaxed);
    INODES[i].store(entry.inode, Ordering::Relaxed);
    // Published last, with release: a lookup that sees the kind sees the rest.
    KINDS[i].store(encode(entry.node), Ordering::Release);
    true
}

/// Forgets `fd` (it is being closed or replaced); returns what it was.
pub(crate) fn remove(fd: i32) -> Option<Node> {
    decode(KINDS[index(fd)?].swap(NONE, Ordering::AcqRel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let e = Entry {
            node: Node::Render(129),
            opener: 7,
            inode: 42,
        };
        assert_eq!(lookup(4000), None);
        assert!(insert(4000, e));
        assert_eq!(lookup(4000), Some(e));
        assert_eq!(remove(4000), Some(Node::Render(129)));
        assert_eq!(lookup(4000), None);
        assert!(insert(
            4001,
            Entry {
                node: Node::Kfd,
                ..e
            }
        ));
        assert_eq!(remove(4001), Some(Node::Kfd));
        assert!(!insert(MAX_FAKE_FD as i32, e));
        assert_eq!(lookup(-1), None);
    }
}
