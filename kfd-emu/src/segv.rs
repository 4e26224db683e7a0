//! The process's `SIGSEGV` handler for the emulator's write-protected mappings: the HDP model's
//! tracked VRAM mappings ([`crate::hdp`]) and trapped doorbell pages ([`crate::doorbell_trap`])
//! each register a claim with it ([`install`]). A write fault (`SEGV_ACCERR`) goes to the claims
//! in turn; one that claims the address has let the store complete. Anything else is passed to
//! the handler installed before (Rust's stack-overflow detection, a debugger's), or the default
//! action. Claims must be async-signal-safe.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Linux's `si_code` for an access to a mapped page the protection forbids.
const SEGV_ACCERR: i32 = 2;

/// A claim: whether the write fault at an address was one of the claimant's (and is handled).
pub(crate) type Claim = fn(usize) -> bool;

/// Registered claims, as function addresses (0: free).
static CLAIMS: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

static INSTALL: Once = Once::new();
/// The SIGSEGV disposition before ours, which faults no claim takes go to.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Emulator instances get distinct ids, so their tracked mappings have distinct owners.
pub(crate) fn next_emulator_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Who owns a tracked mapping: an emulator instance and one of its GPUs.
pub(crate) fn owner(emulator: u64, gpu_index: usize) -> u64 {
    emulator << 8 | gpu_index as u64
}

/// Registers `claim` (once; registering it again does nothing) and installs the handler (once).
pub(crate) fn install(claim: Claim) {
    let f = claim as usize;
    if !CLAIMS.iter().any(|c| c.load(Ordering::Acquire) == f) {
        for c in &CLAIMS {
            match c.compare_exchange(0, f, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(other) if other == f => break,
                Err(_) => {}
            }
        }
    }
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a zeroed struct is the documented way to build one; the handler
        // has the SA_SIGINFO signature. PREVIOUS is written before the new handler can run.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_segv as *const () as usize;
            new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut new.sa_mask);
            if libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut old) == 0
                && PREVIOUS.set(old).is_ok()
            {
                libc::sigaction(libc::SIGSEGV, &new, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_segv(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    if code == SEGV_ACCERR {
        for c in &CLAIMS {
            let f = c.load(Ordering::Acquire);
            if f == 0 {
                continue;
            }
            // SAFETY: only `install` stores here, and only a `Claim`'s address.
            let claim: Claim = unsafe { std::mem::transmute::<usize, Claim>(f) };
            if claim(addr) {
                return;
            }
        }
    }
    // Not ours: whoever handled SIGSEGV before us decides.
    match PREVIOUS.get().copied() {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: a SA_SIGINFO handler takes these three arguments.
                let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: a plain handler takes the signal number.
                let f: extern "C" fn(i32) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // Fall back to the default action: the fault repeats when we return and kills the
            // process as it would have without us.
            // SAFETY: resetting a signal's disposition to the default.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
}
