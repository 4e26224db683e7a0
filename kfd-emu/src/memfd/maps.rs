//! What the process has mapped of a pooled file, read from `/proc/self/smaps` (the only place
//! the kernel tells which file and offset backs a mapping).

use kfd_sys::Errno;
use std::os::fd::{AsRawFd, BorrowedFd};

/// A file's identity as the process's mappings name it: device major, minor and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    major: u32,
    minor: u32,
    ino: u64,
}

impl FileId {
    pub(crate) fn of(fd: BorrowedFd<'_>) -> Result<FileId, Errno> {
        // SAFETY: fstat fills a zeroed local; the descriptor is borrowed open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(Errno::last());
        }
        Ok(FileId {
            major: libc::major(st.st_dev),
            minor: libc::minor(st.st_dev),
            ino: st.st_ino,
        })
    }
}

/// One mapping of the file, outside the emulator's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileMapping {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The file offset at `start`.
    pub(crate) offset: u64,
    pub(crate) prot: i32,
    /// `MADV_DONTFORK` was given (VmFlags `dc`).
    pub(crate) dont_fork: bool,
    /// `MADV_DONTDUMP` was given (VmFlags `dd`).
    pub(crate) dont_dump: bool,
}

/// Parses a mapping's header line: `start-end perms offset major:minor inode [path]`.
fn header(line: &str) -> Option<(usize, usize, i32, u64, FileId)> {
    let mut f = line.split_ascii_whitespace();
    let (start, end) = f.next()?.split_once('-')?;
    let perms = f.next()?.as_bytes();
    let offset = u64::from_str_radix(f.next()?, 16).ok()?;
    let (major, minor) = f.next()?.split_once(':')?;
    let ino = f.next()?.parse().ok()?;
    let mut prot = 0;
    for (i, bit) in [libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC]
        .into_iter()
        .enumerate()
    {
        if perms.get(i).is_some_and(|&c| c != b'-') {
            prot |= bit;
        }
    }
    Some((
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
        prot,
        offset,
        FileId {
            major: u32::from_str_radix(major, 16).ok()?,
            minor: u32::from_str_radix(minor, 16).ok()?,
            ino,
        },
    ))
}

/// Every mapping of `file` in `smaps` text, leaving out those inside `skip` (start, end).
fn parse(text: &str, file: FileId, skip: (usize, usize)) -> Vec<FileMapping> {
    let mut out = Vec::new();
    let mut current: Option<FileMapping> = None;
    for line in text.lines() {
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            if let Some(m) = current.as_mut() {
                m.dont_fork = flags.split_ascii_whitespace().any(|f| f == "dc");
                m.dont_dump = flags.split_ascii_whitespace().any(|f| f == "dd");
            }
            continue;
        }
        // Header lines start with a hex address; key lines with a capitalised name.
        if !line.starts_with(|c: char| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()) {
            continue;
        }
        let Some((start, end, prot, offset, id)) = header(line) else {
            continue;
        };
        out.extend(current.take());
        if id == file && !(start >= skip.0 && end <= skip.1) {
            current = Some(FileMapping {
                start,
                end,
                offset,
                prot,
                dont_fork: false,
                dont_dump: false,
            });
        }
    }
    out.extend(current);
    out
}

fn read(path: &str) -> Result<String, Errno> {
    std::fs::read_to_string(path)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))
}

/// The process's mappings of `file`, other than the emulator's own at `skip`, with their
/// advice flags (from `smaps`, which costs a page-table walk per mapping).
pub(crate) fn mappings(file: FileId, skip: (usize, usize)) -> Result<Vec<FileMapping>, Errno> {
    Ok(parse(&read("/proc/self/smaps")?, file, skip))
}

/// The file ranges (offset, end) that mappings other than the emulator's own reach (from
/// `maps`, which is much cheaper than `smaps` when the process has many mappings).
pub(crate) fn file_ranges(file: FileId, skip: (usize, usize)) -> Result<Vec<(u64, u64)>, Errno> {
    Ok(parse(&read("/proc/self/maps")?, file, skip)
        .into_iter()
        .map(|m| (m.offset, m.offset + (m.end - m.start) as u64))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
7f0000000000-7f0400000000 rw-s 00000000 00:01 4242                       /memfd:kfd-emu-arena (deleted)
Size:           16777216 kB
VmFlags: rd wr sh mr mw me ms sd
7f1000000000-7f1000002000 r--s 00003000 00:01 4242                       /memfd:kfd-emu-arena (deleted)
Size:                  8 kB
VmFlags: rd sh mr mw me ms dc sd
7f1000002000-7f1000003000 rw-s 00010000 00:01 4243                       /memfd:kfd-emu-arena (deleted)
VmFlags: rd wr sh mr mw me ms sd
7f2000000000-7f2000001000 rw-s 00020000 00:01 4242                       /memfd:kfd-emu-arena (deleted)
VmFlags: rd wr sh mr mw me ms dd sd
";

    #[test]
    fn mappings_of_one_file_outside_the_emulators_own_are_found_with_their_flags() {
        let id = FileId {
            major: 0,
            minor: 1,
            ino: 4242,
        };
        let m = parse(SMAPS, id, (0x7f00_0000_0000, 0x7f04_0000_0000));
        assert_eq!(
            m,
            vec![
                FileMapping {
                    start: 0x7f10_0000_0000,
                    end: 0x7f10_0000_2000,
                    offset: 0x3000,
                    prot: libc::PROT_READ,
                    dont_fork: true,
                    dont_dump: false,
                },
                FileMapping {
                    start: 0x7f20_0000_0000,
                    end: 0x7f20_0000_1000,
                    offset: 0x20000,
                    prot: libc::PROT_READ | libc::PROT_WRITE,
                    dont_fork: false,
                    dont_dump: true,
                },
            ]
        );
    }
}
