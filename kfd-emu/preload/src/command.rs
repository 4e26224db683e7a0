//! `popen` of the commands ROCm tools run to inspect the GPU driver.
//!
//! rocminfo runs `lsmod | grep amdgpu` before anything else and gives up if it prints nothing.
//! The emulated driver has no kernel module, so such commands are answered from memory with what
//! they would print on a machine with amdgpu loaded; every other command runs as usual.

use crate::hooks::cstr;
use crate::{real, state};
use core::ffi::{c_char, c_int, CStr};
use libc::{ssize_t, FILE};
use std::sync::Mutex;

/// Streams handed out by [`popen`] for emulated commands (as addresses), which [`pclose`] must
/// close itself.
static FAKE_STREAMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// What an emulated command prints, if `command` is one: `lsmod`, which ROCm's tools run to see
/// whether amdgpu is loaded.
fn emulated_command_output(command: &CStr) -> Option<String> {
    let cmd = command.to_str().ok()?;
    if cmd.trim_start().starts_with("lsmod") && state::system().is_some() {
        let mut out = String::new();
        if !cmd.contains('|') {
            out.push_str("Module                  Size  Used by\n");
        }
        out.push_str("amdgpu               9728000  0\n");
        return Some(out);
    }
    None
}

/// Overrides `popen`: commands that inspect the GPU driver see the emulated one; others run.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn popen(command: *const c_char, mode: *const c_char) -> *mut FILE {
    // SAFETY: C strings per the C contract.
    let (Some(cmd), Some(m)) = (unsafe { cstr(command) }, unsafe { cstr(mode) }) else {
        // SAFETY: forwarded unchanged.
        return unsafe { real::popen(command, mode) };
    };
    let output = match emulated_command_output(cmd) {
        Some(o) if m.to_bytes().starts_with(b"r") => o,
        // SAFETY: forwarded unchanged.
        _ => return unsafe { real::popen(command, mode) },
    };
    // SAFETY: a static name; memfd_create is not overridden.
    let fd = unsafe { libc::memfd_create(c"kfd-emu-popen".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return core::ptr::null_mut();
    }
    // SAFETY: `fd` is ours; the buffer is live for the call.
    let written = unsafe { libc::write(fd, output.as_ptr().cast(), output.len()) };
    // SAFETY: `fd` is ours.
    if written != output.len() as ssize_t || unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } != 0 {
        // SAFETY: `fd` is ours.
        unsafe { real::close(fd) };
        return core::ptr::null_mut();
    }
    // SAFETY: `fd` is an open descriptor the stream takes over.
    let stream = unsafe { libc::fdopen(fd, c"r".as_ptr()) };
    if stream.is_null() {
        // SAFETY: `fd` is still ours.
        unsafe { real::close(fd) };
        return stream;
    }
    FAKE_STREAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(stream as usize);
    log::debug!("kfd-emu-preload: popen({cmd:?}) emulated");
    stream
}

/// Overrides `pclose`: emulated commands "exited" with status 0.
///
/// # Safety
/// As the C function.
#[no_mangle]
pub unsafe extern "C" fn pclose(stream: *mut FILE) -> c_int {
    let fake = {
        let mut s = FAKE_STREAMS.lock().unwrap_or_else(|p| p.into_inner());
        match s.iter().position(|&p| p == stream as usize) {
            Some(i) => {
                s.swap_remove(i);
                true
            }
            None => false,
        }
    };
    if fake {
        // SAFETY: a stream from our fdopen, closed once.
        return if unsafe { libc::fclose(stream) } == 0 {
            0
        } else {
            -1
        };
    }
    // SAFETY: forwarded unchanged.
    unsafe { real::pclose(stream) }
}
