//! Global wave sync (GWS): the hardware barrier cooperative dispatches (grid-wide
//! synchronisation, `hipLaunchCooperativeKernel`) need. A GPU has one set; KFD gives it to one
//! queue of the process at a time (`AMDKFD_IOC_ALLOC_QUEUE_GWS`) and takes it back when that
//! queue is destroyed.

use super::AqlQueue;
use crate::error::{Error, Result};
use kfd_sys::bindings::kfd_ioctl_alloc_queue_gws_args;
use kfd_sys::DriverExt;

impl AqlQueue {
    /// Gives this queue its GPU's global wave sync resources; returns how many there are
    /// (the topology's `num_gws`). Fails with `EBUSY` from the driver when another queue of
    /// the process on the same GPU holds them, and [`Error::Unsupported`] on a GPU without
    /// any.
    pub fn acquire_gws(&self) -> Result<u32> {
        let n = self.gpu().info().gws;
        if n == 0 {
            return Err(Error::Unsupported(format!(
                "GPU {:#x} has no global wave sync resources",
                self.gpu().id()
            )));
        }
        self.set_gws(n)?;
        Ok(n)
    }

    /// Gives the GWS back (they also go back when the queue is destroyed).
    pub fn release_gws(&self) -> Result<()> {
        self.set_gws(0)
    }

    fn set_gws(&self, num_gws: u32) -> Result<()> {
        let mut args = kfd_ioctl_alloc_queue_gws_args {
            queue_id: self.id(),
            num_gws,
            ..Default::default()
        };
        self.gpu()
            .kfd()
            .driver()
            .kfd_ioctl(&mut args)
            .map(drop)
            .map_err(Error::ioctl(&args))
    }
}
