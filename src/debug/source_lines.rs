//! Source lines of GPU code: a code object built with line tables (`hipcc -g` or
//! `-gline-tables-only`) maps a PC to `file:line`, with the chain of functions inlined there,
//! through its DWARF (`addr2line`). Fault reports use it for the faulting PC.

use addr2line::gimli;
use object::{Object, ObjectSection};
use std::any::Any;
use std::sync::{Arc, Mutex, Weak};

/// A loaded code object that has line tables.
struct Lines {
    /// Where its image is in GPU memory, and the ELF virtual address at its start.
    start: u64,
    end: u64,
    image_start: u64,
    /// Its memory (any holder of it): the entry goes when the code object is unloaded.
    memory: Weak<dyn Any + Send + Sync>,
    elf: Arc<[u8]>,
}

/// The line tables of the loaded code objects that have them.
#[derive(Default)]
pub(crate) struct SourceMap {
    objects: Mutex<Vec<Lines>>,
}

impl SourceMap {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lines>> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers the code object `elf`, loaded at GPU addresses `span` with ELF address
    /// `image_start` at its start, if it has line tables (otherwise keeps nothing), for as long
    /// as `memory` (what holds the loaded image) lives.
    pub(crate) fn register<M: Any + Send + Sync>(
        &self,
        elf: &[u8],
        image_start: u64,
        span: std::ops::Range<u64>,
        memory: &Arc<M>,
    ) {
        let has_lines = object::File::parse(elf)
            .ok()
            .and_then(|f| f.section_by_name(".debug_line").map(|s| s.size() > 0))
            .unwrap_or(false);
        if !has_lines {
            return;
        }
        let mut objects = self.lock();
        objects.retain(|o| o.memory.strong_count() > 0);
        let memory: Arc<dyn Any + Send + Sync> = memory.clone();
        objects.push(Lines {
            start: span.start,
            end: span.end,
            image_start,
            memory: Arc::downgrade(&memory),
            elf: elf.into(),
        });
    }

    /// Where `pc` is in the source: `file:line in function`, innermost first, each inlined
    /// function followed by the place it was inlined at. `None` when no loaded code object
    /// with line tables holds `pc`.
    pub(crate) fn locate(&self, pc: u64) -> Option<Vec<String>> {
        let (elf, vaddr) = {
            let objects = self.lock();
            let o = objects
                .iter()
                .find(|o| (o.start..o.end).contains(&pc) && o.memory.strong_count() > 0)?;
            (o.elf.clone(), pc - o.start + o.image_start)
        };
        frames(&elf, vaddr).ok().filter(|f| !f.is_empty())
    }
}

/// The frames at `vaddr` of `elf`'s line tables.
fn frames(elf: &[u8], vaddr: u64) -> Result<Vec<String>, gimli::Error> {
    let file = object::File::parse(elf).map_err(|_| gimli::Error::Io)?;
    let dwarf = gimli::Dwarf::load(|id| -> Result<_, gimli::Error> {
        let data = file
            .section_by_name(id.name())
            .and_then(|s| s.data().ok())
            .unwrap_or(&[]);
        Ok(gimli::EndianSlice::new(data, gimli::LittleEndian))
    })?;
    let context = addr2line::Context::from_dwarf(dwarf)?;
    let mut found = Vec::new();
    let mut frames = context.find_frames(vaddr).skip_all_loads()?;
    while let Some(frame) = frames.next()? {
        let place = match &frame.location {
            Some(l) => format!(
                "{}:{}",
                l.file.unwrap_or("?"),
                l.line.map_or_else(|| "?".to_owned(), |n| n.to_string())
            ),
            None => "?".to_owned(),
        };
        let function = frame
            .function
            .as_ref()
            .and_then(|f| f.raw_name().ok())
            .map(|n| crate::code_object::demangle::demangle(&n).unwrap_or_else(|| n.into_owned()));
        found.push(match function {
            Some(f) => format!("{place} in {f}"),
            None => place,
        });
    }
    Ok(found)
}
