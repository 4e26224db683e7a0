//! The list of loaded code objects a GPU debugger reads, in the `r_debug` / `link_map` layout of
//! `<link.h>`, as ROCr keeps it for rocgdb.
//!
//! A debugger finds the list through KFD: kfdrt passes its address to `AMDKFD_IOC_RUNTIME_ENABLE`
//! when a device opens, and a debugger attaching with `DBG_TRAP_ENABLE` gets it back in
//! `kfd_runtime_info::r_debug`. It then reads the list from this process's memory: each
//! `link_map` names a code object by a `memory://` URI (the ELF bytes kfdrt keeps for as long
//! as the code object is loaded) and gives its load delta in `l_addr`. Around each change the
//! list's state goes to `RT_ADD` or `RT_DELETE` and kfdrt calls [`r_brk`], the function whose
//! address is in `r_brk`, where a debugger keeps a breakpoint to re-read the list; then the
//! state is `RT_CONSISTENT` again.
//!
//! There is one list per process, as there is one KFD process per process.

use std::ffi::{c_char, c_int, CString};
use std::ptr;
use std::sync::{Mutex, OnceLock};

/// `struct r_debug` (`<link.h>`).
#[repr(C)]
#[derive(Debug)]
pub struct RDebug {
    /// Protocol version (1).
    pub r_version: c_int,
    /// The first entry, or null.
    pub r_map: *mut LinkMap,
    /// Address of the function called around every change ([`r_brk`]).
    pub r_brk: usize,
    /// [`RT_CONSISTENT`], [`RT_ADD`] or [`RT_DELETE`].
    pub r_state: c_int,
    /// Unused (0).
    pub r_ldbase: usize,
}

/// `struct link_map` (`<link.h>`): one loaded code object.
#[repr(C)]
#[derive(Debug)]
pub struct LinkMap {
    /// Load delta: the GPU address of the code object's virtual address 0.
    pub l_addr: u64,
    /// `memory://<pid>#offset=0x<address>&size=<bytes>`, NUL-terminated.
    pub l_name: *const c_char,
    /// The dynamic section's GPU address (0: not given).
    pub l_ld: u64,
    /// The next entry, or null.
    pub l_next: *mut LinkMap,
    /// The previous entry, or null.
    pub l_prev: *mut LinkMap,
}

/// The list is stable.
pub const RT_CONSISTENT: c_int = 0;
/// An entry is being added.
pub const RT_ADD: c_int = 1;
/// An entry is being removed.
pub const RT_DELETE: c_int = 2;

/// Called after the list changes state; a debugger keeps a breakpoint here.
#[inline(never)]
pub extern "C" fn r_brk() {
    // Something the optimizer must keep, so the function has a body and an address of its own.
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

struct Entry {
    map: Box<LinkMap>,
    _name: CString,
    _elf: Box<[u8]>,
    id: u64,
}

struct List {
    head: Box<RDebug>,
    entries: Vec<Entry>,
    next_id: u64,
}

// SAFETY: the raw pointers inside point into boxes the list owns; every access is under the
// mutex.
unsafe impl Send for List {}

fn list() -> &'static Mutex<List> {
    static LIST: OnceLock<Mutex<List>> = OnceLock::new();
    LIST.get_or_init(|| {
        Mutex::new(List {
            head: Box::new(RDebug {
                r_version: 1,
                r_map: ptr::null_mut(),
                r_brk: r_brk as *const () as usize,
                r_state: RT_CONSISTENT,
                r_ldbase: 0,
            }),
            entries: Vec::new(),
            next_id: 0,
        })
    })
}

/// The address of the process's `r_debug` (`<link.h>`'s layout), which kfdrt gives KFD at
/// `RUNTIME_ENABLE` and a debugger gets back from `DBG_TRAP`.
pub fn address() -> u64 {
    let g = list().lock().unwrap_or_else(|p| p.into_inner());
    &*g.head as *const RDebug as u64
}

impl List {
    /// Relinks `r_map` and the entries' `l_next`/`l_prev` in order.
    fn relink(&mut self) {
        let n = self.entries.len();
        let ptrs: Vec<*mut LinkMap> = self
            .entries
            .iter_mut()
            .map(|e| &mut *e.map as *mut LinkMap)
            .collect();
        for (i, e) in self.entries.iter_mut().enumerate() {
            e.map.l_prev = if i == 0 { ptr::null_mut() } else { ptrs[i - 1] };
            e.map.l_next = if i + 1 == n {
                ptr::null_mut()
            } else {
                ptrs[i + 1]
            };
        }
        self.head.r_map = ptrs.first().copied().unwrap_or(ptr::null_mut());
    }

    /// Runs `change` between the `state` and `RT_CONSISTENT` notifications.
    fn changing(&mut self, state: c_int, change: impl FnOnce(&mut List)) {
        self.head.r_state = state;
        r_brk();
        change(self);
        self.relink();
        self.head.r_state = RT_CONSISTENT;
        r_brk();
    }
}

/// A code object's place in the list; dropping it removes the entry.
#[derive(Debug)]
pub struct Registration {
    id: u64,
}

/// Adds a code object: `elf` its ELF bytes (copied and kept), `load_delta` the GPU address of
/// its virtual address 0.
pub fn register(elf: &[u8], load_delta: u64) -> Registration {
    let elf: Box<[u8]> = elf.into();
    let name = CString::new(format!(
        "memory://{}#offset={:#x}&size={}",
        std::process::id(),
        elf.as_ptr() as usize,
        elf.len()
    ))
    .unwrap_or_default();
    let mut g = list().lock().unwrap_or_else(|p| p.into_inner());
    let id = g.next_id;
    g.next_id += 1;
    g.changing(RT_ADD, |l| {
        l.entries.push(Entry {
            map: Box::new(LinkMap {
                l_addr: load_delta,
                l_name: name.as_ptr(),
                l_ld: 0,
                l_next: ptr::null_mut(),
                l_prev: ptr::null_mut(),
            }),
            _name: name,
            _elf: elf,
            id,
        })
    });
    Registration { id }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut g = list().lock().unwrap_or_else(|p| p.into_inner());
        let id = self.id;
        g.changing(RT_DELETE, |l| l.entries.retain(|e| e.id != id));
    }
}

/// One entry of the list, as a debugger reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedCodeObject {
    /// `l_name`: where the ELF is (`memory://pid#offset=0x…&size=…`).
    pub uri: String,
    /// `l_addr`: the load delta.
    pub load_delta: u64,
}

/// Walks the list from `r_debug` the way a debugger does, through the pointers alone.
///
/// # Safety
/// `r_debug` must be the address [`address`] returned (or another valid `r_debug` whose list
/// does not change during the walk).
pub unsafe fn walk(r_debug: u64) -> Vec<LoadedCodeObject> {
    // Hold the lock so no entry goes away mid-walk (a debugger stops the process instead).
    let _g = list().lock().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::new();
    // SAFETY: the caller's contract: a valid `r_debug`, stable while the lock is held.
    let mut at = unsafe { (*(r_debug as *const RDebug)).r_map };
    while !at.is_null() {
        // SAFETY: every `l_next` is null or a live entry of the list.
        let m = unsafe { &*at };
        // SAFETY: `l_name` is the entry's NUL-terminated name.
        let uri = unsafe { std::ffi::CStr::from_ptr(m.l_name) }
            .to_string_lossy()
            .into_owned();
        out.push(LoadedCodeObject {
            uri,
            load_delta: m.l_addr,
        });
        at = m.l_next;
    }
    out
}

/// The loaded code objects of this process, oldest first.
pub fn loaded_code_objects() -> Vec<LoadedCodeObject> {
    // SAFETY: the address is the process's own list.
    unsafe { walk(address()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_and_go_in_order() {
        let a = register(b"\x7fELF-a", 0x1000);
        let b = register(b"\x7fELF-bb", 0x2000);
        let mine = |l: &[LoadedCodeObject]| {
            l.iter()
                .filter(|e| e.load_delta == 0x1000 || e.load_delta == 0x2000)
                .cloned()
                .collect::<Vec<_>>()
        };
        let now = mine(&loaded_code_objects());
        assert_eq!(now.len(), 2, "{now:?}");
        assert!(now[0].uri.ends_with("&size=6"), "{}", now[0].uri);
        assert!(now[1]
            .uri
            .starts_with(&format!("memory://{}#offset=0x", std::process::id())));
        drop(a);
        let now = mine(&loaded_code_objects());
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].load_delta, 0x2000);
        drop(b);
        // SAFETY: the process's own list.
        let head = unsafe { &*(address() as *const RDebug) };
        assert_eq!(head.r_state, RT_CONSISTENT);
        assert_eq!(head.r_brk, r_brk as *const () as usize);
    }
}
