//! HIP's device `printf` over hostcalls: messages reassembled from the pieces each lane sends,
//! formatted with the C library's own `snprintf`, one conversion at a time.
//!
//! A message is a sequence of hostcalls from one lane, each carrying a descriptor word (bit 0
//! begins a message, bit 1 ends it, bits 5–7 count the data words that follow, bits 8–63 are
//! the message id the host handed out at its beginning) and up to seven data words. The data
//! is a control word (bit 0: stderr), the format string (its bytes, eight to a word, NUL
//! included), then one word per argument, or a string's words for an argument the compiler saw
//! matching a `%s`. The host answers the beginning with the message's id and the end with what
//! `printf` returns: the number of characters printed.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

const BEGIN: u64 = 1;
const END: u64 = 2;

/// One finished `printf` of one work-item, as the process's handler receives it
/// ([`crate::Kfd::set_printf_handler`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelPrint {
    /// The GPU the kernel ran on.
    pub gpu_id: u32,
    /// The formatted text (a `printf` that ends its line includes the `\n`).
    pub text: String,
    /// The kernel printed to stderr (`fprintf(stderr, …)`) rather than stdout.
    pub to_stderr: bool,
}

/// The handler a process installed ([`crate::Kfd::set_printf_handler`]).
pub(crate) struct PrintfHandler(pub(crate) Box<dyn Fn(&KernelPrint) + Send + Sync>);

/// Hands `print` to `handler`, or without one writes it to stdout or stderr whole.
pub(super) fn emit(handler: Option<Arc<PrintfHandler>>, print: KernelPrint) {
    match handler {
        Some(h) => (h.0)(&print),
        None => {
            use std::io::Write;
            let written = if print.to_stderr {
                let mut e = std::io::stderr().lock();
                e.write_all(print.text.as_bytes()).and_then(|()| e.flush())
            } else {
                let mut o = std::io::stdout().lock();
                o.write_all(print.text.as_bytes()).and_then(|()| o.flush())
            };
            if let Err(e) = written {
                log::warn!("kfdrt: writing a kernel's printf: {e}");
            }
        }
    }
}

/// The messages being assembled, by id; ids of finished ones are reused.
#[derive(Default)]
pub(super) struct Messages {
    open: Vec<Option<Vec<u64>>>,
    free: Vec<usize>,
}

impl Messages {
    /// One lane's hostcall: its eight words in, the two words it gets back out.
    pub(super) fn handle(&mut self, words: &[u64; 8], emit: &dyn Fn(String, bool)) -> [u64; 2] {
        let mut desc = words[0];
        let len = ((desc >> 5) & 7) as usize;
        let id = if desc & BEGIN != 0 {
            let id = self.free.pop().unwrap_or_else(|| {
                self.open.push(None);
                self.open.len() - 1
            });
            self.open[id] = Some(Vec::new());
            desc = (desc & 0xFF & !BEGIN) | (id as u64) << 8;
            id
        } else {
            (desc >> 8) as usize
        };
        let Some(Some(message)) = self.open.get_mut(id) else {
            log::warn!("kfdrt: printf: a kernel continued message {id}, which never began");
            return [desc, 0];
        };
        message.extend_from_slice(&words[1..1 + len]);
        if desc & END == 0 {
            return [desc, 0];
        }
        let words = self.open[id].take().unwrap_or_default();
        self.free.push(id);
        match format(&words) {
            Some((text, to_stderr)) => {
                let n = text.len() as u64;
                emit(text, to_stderr);
                [n, 0]
            }
            None => [u64::MAX, 0],
        }
    }
}

/// The text of a finished message and whether it goes to stderr; `None` for a malformed one.
pub(crate) fn format(words: &[u64]) -> Option<(String, bool)> {
    let (&control, rest) = words.split_first()?;
    if control & !1 != 0 {
        return None;
    }
    let (format, mut args) = take_string(rest)?;
    let mut out = Vec::new();
    let mut rest = format.as_slice();
    while let Some(at) = rest.iter().position(|&b| b == b'%') {
        out.extend_from_slice(&rest[..at]);
        rest = &rest[at..];
        let Some(spec) = Spec::parse(rest) else {
            // A lone '%' at the end, or an unknown conversion: printed as it is.
            out.extend_from_slice(rest);
            rest = &[];
            break;
        };
        rest = &rest[spec.len..];
        if spec.conversion == b'%' {
            out.push(b'%');
            continue;
        }
        match spec.render(&mut args) {
            Some(text) => out.extend_from_slice(&text),
            // Arguments ran out: the rest is not printed (as C's printf reads garbage there).
            None => return Some((String::from_utf8_lossy(&out).into_owned(), control == 1)),
        }
    }
    out.extend_from_slice(rest);
    Some((String::from_utf8_lossy(&out).into_owned(), control == 1))
}

/// A string sent as words (bytes little-endian, NUL-terminated): its bytes and what follows.
fn take_string(words: &[u64]) -> Option<(Vec<u8>, &[u64])> {
    let mut bytes = Vec::new();
    for (i, w) in words.iter().enumerate() {
        for b in w.to_le_bytes() {
            if b == 0 {
                return Some((bytes, &words[i + 1..]));
            }
            bytes.push(b);
        }
    }
    // Unterminated: the message ended inside the string.
    (!bytes.is_empty() || words.is_empty()).then_some((bytes, &[]))
}

/// One conversion specification: `%[flags][width][.precision][length]conversion`.
struct Spec {
    /// The specification's bytes, `%` to conversion.
    text: Vec<u8>,
    len: usize,
    conversion: u8,
    /// The length modifier asks for a 64-bit integer (`l`, `ll`, `j`, `z`, `t`).
    wide: bool,
}

impl Spec {
    fn parse(s: &[u8]) -> Option<Spec> {
        let end = 1 + s[1..]
            .iter()
            .position(|b| !b"-+ #0123456789.*hljztLq".contains(b))?;
        let conversion = s[end];
        if !b"diouxXfFeEgGaAcspn%".contains(&conversion) {
            return None;
        }
        let body = &s[1..end];
        let wide = body
            .iter()
            .any(|b| matches!(b, b'l' | b'j' | b'z' | b't' | b'q'));
        Some(Spec {
            text: s[..=end].to_vec(),
            len: end + 1,
            conversion,
            wide,
        })
    }

    /// The conversion of the next argument(s); `None` when they ran out.
    fn render(&self, args: &mut &[u64]) -> Option<Vec<u8>> {
        // `*` takes a width or precision from the arguments: written into the spec, so the C
        // call has exactly one variadic argument. Length modifiers are dropped; the argument is
        // passed as the type they ask for.
        let mut spec = Vec::with_capacity(self.text.len() + 8);
        // `h` and `hh` stay for integer conversions: C narrows the int it is passed itself.
        let mut narrow = 0;
        for &b in &self.text[..self.text.len() - 1] {
            match b {
                b'*' => {
                    let (&v, rest) = args.split_first()?;
                    *args = rest;
                    spec.extend_from_slice((v as u32 as i32).to_string().as_bytes());
                }
                b'h' => narrow += 1,
                b'l' | b'j' | b'z' | b't' | b'L' | b'q' => {}
                b => spec.push(b),
            }
        }
        let c = self.conversion;
        let value = match c {
            b's' => {
                let (text, rest) = take_string(args)?;
                *args = rest;
                Arg::Str(CString::new(text).ok()?)
            }
            _ => {
                let (&v, rest) = args.split_first()?;
                *args = rest;
                match c {
                    b'n' => return Some(Vec::new()),
                    b'p' => Arg::Pointer(v),
                    b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                        Arg::Double(f64::from_bits(v))
                    }
                    b'c' => Arg::Int(v as u32),
                    _ if self.wide => {
                        spec.extend_from_slice(b"ll");
                        Arg::Long(v)
                    }
                    _ => {
                        spec.extend(std::iter::repeat_n(b'h', narrow.min(2)));
                        Arg::Int(v as u32)
                    }
                }
            }
        };
        spec.push(c);
        Some(c_format(&spec, &value))
    }
}

/// An argument as the C call passes it.
enum Arg {
    Int(u32),
    Long(u64),
    Double(f64),
    Pointer(u64),
    Str(CString),
}

/// `snprintf` of one conversion `spec` (no `*`, one argument of the type `arg` is).
fn c_format(spec: &[u8], arg: &Arg) -> Vec<u8> {
    let Ok(spec) = CString::new(spec) else {
        return Vec::new();
    };
    let call = |buf: *mut c_char, len: usize| -> c_int {
        // SAFETY: `spec` is one NUL-terminated conversion built by `Spec::render`, whose type
        // matches the one argument passed (an int for plain integer conversions and `%c`, a
        // long long for `ll` ones, a double for floating ones, a pointer for `%p`, a
        // NUL-terminated string for `%s`); `buf` has room for `len` bytes (or is null with
        // `len` 0).
        unsafe {
            match arg {
                Arg::Int(v) => libc::snprintf(buf, len, spec.as_ptr(), *v as c_int),
                Arg::Long(v) => libc::snprintf(buf, len, spec.as_ptr(), *v as libc::c_longlong),
                Arg::Double(v) => libc::snprintf(buf, len, spec.as_ptr(), *v),
                Arg::Pointer(v) => libc::snprintf(buf, len, spec.as_ptr(), *v as *const c_void),
                Arg::Str(s) => libc::snprintf(buf, len, spec.as_ptr(), s.as_ptr()),
            }
        }
    };
    let Ok(n) = usize::try_from(call(std::ptr::null_mut(), 0)) else {
        return Vec::new();
    };
    let mut out = vec![0u8; n + 1];
    call(out.as_mut_ptr().cast(), out.len());
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message's words: control word, format string, then the given argument words.
    fn message(format: &str, args: &[u64]) -> Vec<u64> {
        let mut words = vec![0];
        words.extend(string_words(format));
        words.extend_from_slice(args);
        words
    }

    fn string_words(s: &str) -> Vec<u64> {
        let mut bytes = s.as_bytes().to_vec();
        bytes.push(0);
        bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect()
    }

    fn text(words: &[u64]) -> String {
        format(words).expect("well formed").0
    }

    #[test]
    fn conversions_follow_c() {
        let minus_five = (-5i32) as u32 as u64;
        assert_eq!(
            text(&message(
                "%d|%u|%x|%5d|%-3d|",
                &[minus_five, minus_five, 255, 42, 7]
            )),
            "-5|4294967291|ff|   42|7  |"
        );
        assert_eq!(
            text(&message("%lld %lu", &[(-3i64) as u64, u64::MAX])),
            "-3 18446744073709551615"
        );
        // C narrows for `h` and `hh` itself; `%lc` is still one character.
        assert_eq!(
            text(&message("%hhd %hu %lc", &[300, 70_000, b'z' as u64])),
            "44 4464 z"
        );
        assert_eq!(
            text(&message(
                "%.2f %e %g",
                &[1.005f64.to_bits(), 1e10f64.to_bits(), 0.5f64.to_bits()]
            )),
            "1.00 1.000000e+10 0.5"
        );
        assert_eq!(
            text(&message("%c%c %% %p", &[b'o' as u64, b'k' as u64, 0x1000])),
            "ok % 0x1000"
        );
        assert_eq!(
            text(&message("[%*d] [%.*f]", &[4, 9, 1, 2.25f64.to_bits()])),
            "[   9] [2.2]"
        );
    }

    #[test]
    fn strings_take_their_own_words() {
        let mut args = string_words("a longer string argument");
        args.push(3);
        assert_eq!(
            text(&message("%s=%d!", &args)),
            "a longer string argument=3!"
        );
        let args = [&string_words("abcdef")[..], &string_words("x")[..], &[5]].concat();
        assert_eq!(text(&message("%.2s|%3s|%d", &args)), "ab|  x|5");
    }

    #[test]
    fn missing_arguments_end_the_text_and_bad_control_words_are_refused() {
        assert_eq!(text(&message("a %d b %d c", &[1])), "a 1 b ");
        assert_eq!(text(&message("100%", &[])), "100%");
        let mut bad = message("x", &[]);
        bad[0] = 4;
        assert_eq!(format(&bad), None);
        let mut stderr = message("e", &[]);
        stderr[0] = 1;
        assert_eq!(format(&stderr), Some(("e".into(), true)));
    }

    #[test]
    fn messages_are_assembled_across_hostcalls_and_ids_reused() {
        let printed = std::cell::RefCell::new(Vec::new());
        let emit = |t: String, _| printed.borrow_mut().push(t);
        let mut m = Messages::default();
        let desc = |begin: bool, end: bool, len: u64, id: u64| {
            u64::from(begin) | u64::from(end) << 1 | len << 5 | id << 8
        };
        // Two lanes interleave: each gets its own id.
        let a = m.handle(&[desc(true, false, 1, 0), 0, 0, 0, 0, 0, 0, 0], &emit)[0];
        let b = m.handle(&[desc(true, false, 1, 0), 0, 0, 0, 0, 0, 0, 0], &emit)[0];
        assert_ne!(a >> 8, b >> 8);
        let fmt = string_words("v=%d\n");
        let mut words = [0u64; 8];
        words[0] = a | 1 << 5;
        words[1] = fmt[0];
        assert_eq!(
            m.handle(&words, &emit)[0],
            a | 1 << 5,
            "a middle piece echoes"
        );
        let mut last = [0u64; 8];
        last[0] = a | END | 1 << 5;
        last[1] = 17;
        assert_eq!(m.handle(&last, &emit)[0], 5);
        assert_eq!(printed.borrow().as_slice(), ["v=17\n"]);
        // The finished id is handed out again.
        let c = m.handle(&[desc(true, false, 1, 0), 0, 0, 0, 0, 0, 0, 0], &emit)[0];
        assert_eq!(c >> 8, a >> 8);
        // A message nobody began is refused without printing.
        m.handle(&[desc(false, true, 0, 99), 0, 0, 0, 0, 0, 0, 0], &emit);
        assert_eq!(printed.borrow().len(), 1);
    }
}
