//! C++ names of GPU symbols, for kernel look-ups by signature and for the source lines of
//! reports (which sit below code objects, so this is a module of its own).

/// The C++ name of an Itanium-mangled symbol (`_Z...`), or `None`.
pub(crate) fn demangle(symbol: &str) -> Option<String> {
    if !symbol.starts_with("_Z") {
        return None;
    }
    cpp_demangle::Symbol::new(symbol).ok()?.demangle().ok()
}
