//! Storage for GFX11 VOPD halves: an [`Inst`] is `Copy` and fixed-size, so a dual-issue
//! instruction refers to its two halves, decoded once per distinct encoding and kept for the
//! life of the process (code holds few distinct VOPD encodings; the same words always give the
//! same halves, so they are shared).

use super::Inst;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

type Halves = &'static [Inst; 2];

/// The process's halves, by the instruction's words.
fn table() -> &'static Mutex<HashMap<[u32; 3], Halves>> {
    static TABLE: OnceLock<Mutex<HashMap<[u32; 3], Halves>>> = OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The shared copy of `halves` (keyed by the X half's words, which hold the whole encoding).
pub(super) fn intern(halves: [Inst; 2]) -> Halves {
    let key = halves[0].words;
    let mut t = table().lock().unwrap_or_else(|p| p.into_inner());
    t.entry(key).or_insert_with(|| Box::leak(Box::new(halves)))
}
