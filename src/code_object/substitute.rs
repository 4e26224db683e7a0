//! `KFDRT_SUBSTITUTE=kernel_name=path.co`: dispatch a kernel from another code object (IREE's
//! executable substitution), to try a fixed or instrumented build of one kernel without
//! rebuilding the program. The substitute is looked up when the program asks a code object for
//! the kernel by name ([`crate::CodeObject::kernel`]); it is loaded on the same GPU, checked as
//! any load is, and kept alive by the kernel handle. A debugging switch
//! ([`crate::DebugOptions::substitute`]) that acts on code objects, so it lives with them.

use crate::code_object::CodeObject;
use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// The substitute for kernel `name` of `co`, if the device was opened with one for that name.
pub(crate) fn substitute(co: &CodeObject, name: &str) -> Option<Result<Kernel>> {
    let memory = co.memory();
    let kfd = memory.kfd();
    let (_, path) = kfd
        .shared
        .debug
        .substitute
        .iter()
        .find(|(kernel, _)| kernel == name)?;
    let fail = |reason: String| Error::Substitution {
        kernel: name.to_string(),
        path: path.clone(),
        reason,
    };
    Some((|| {
        let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
        let gpu = kfd
            .gpu_by_id(memory.owner_gpu_id())
            .ok_or_else(|| fail("the code object's GPU is gone".into()))?;
        let other = gpu
            .load_code_object(&bytes)
            .map_err(|e| fail(format!("cannot load it: {e}")))?;
        let kernel = other
            .kernel_unsubstituted(name)
            .map_err(|e| fail(e.to_string()))?;
        log::info!(
            "kfdrt: substituting kernel {name} from {} (KFDRT_SUBSTITUTE)",
            path.display()
        );
        Ok(kernel)
    })())
}
