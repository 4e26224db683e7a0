//! Where the layers above the device keep state per device without the device naming its type:
//! shared objects made on first use and kept only while something holds them (a GPU's trap
//! handler, hostcall service, HDP-flush queue, the code loader's queue, kfdrt as its own
//! debugger), and settings (the `printf` handler). Each is found by its type and a key (the GPU's
//! index, or 0), so every such object is made the same way: look, upgrade, or make it while
//! holding its slot, so that two threads asking at once get one object.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

type Shared = dyn Any + Send + Sync;

/// A slot: the weak handle of a made-on-use object, or a setting.
#[derive(Default)]
struct Slot {
    object: Option<Weak<Shared>>,
    setting: Option<Arc<Shared>>,
}

/// A slot's address: the type it holds, and its key.
type SlotKey = (TypeId, usize);

/// The slots of one device, by type and key.
#[derive(Default)]
pub(crate) struct Slots {
    slots: Mutex<HashMap<SlotKey, Arc<Mutex<Slot>>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Slots {
    fn slot<T: Any>(&self, key: usize) -> Arc<Mutex<Slot>> {
        lock(&self.slots)
            .entry((TypeId::of::<T>(), key))
            .or_default()
            .clone()
    }

    /// The live `T` of `key`, or one `make` makes now, which the slot then refers to (weakly:
    /// it lives as long as its holders). The slot is held while `make` runs, so concurrent
    /// callers wait for the one object; `make` may use other slots, not this one.
    pub(crate) fn get_or_make<T: Any + Send + Sync, E>(
        &self,
        key: usize,
        make: impl FnOnce() -> Result<Arc<T>, E>,
    ) -> Result<Arc<T>, E> {
        let slot = self.slot::<T>(key);
        let mut slot = lock(&slot);
        if let Some(live) = slot.object.as_ref().and_then(Weak::upgrade) {
            if let Ok(t) = live.downcast::<T>() {
                return Ok(t);
            }
        }
        let made = make()?;
        let weak: Weak<Shared> = Arc::downgrade(&made) as Weak<Shared>;
        slot.object = Some(weak);
        Ok(made)
    }

    /// Sets (or with `None` clears) the setting of type `T`.
    pub(crate) fn set<T: Any + Send + Sync>(&self, value: Option<T>) {
        let slot = self.slot::<T>(0);
        lock(&slot).setting = value.map(|v| Arc::new(v) as Arc<Shared>);
    }

    /// The setting of type `T`, if set.
    pub(crate) fn setting<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let slot = self.slot::<T>(0);
        let value = lock(&slot).setting.clone()?;
        value.downcast::<T>().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_made_once_while_held_and_again_after() {
        let slots = Slots::default();
        let a = slots
            .get_or_make::<String, ()>(1, || Ok(Arc::new("one".into())))
            .unwrap();
        let b = slots
            .get_or_make::<String, ()>(1, || Err(()))
            .expect("the live one, not a new one");
        assert!(Arc::ptr_eq(&a, &b));
        let other_key = slots.get_or_make::<String, ()>(0, || Ok(Arc::new("zero".into())));
        assert_eq!(
            other_key.as_deref().map(String::as_str),
            Ok("zero"),
            "keys are apart"
        );
        let other_type = slots.get_or_make::<u32, ()>(1, || Ok(Arc::new(1)));
        assert_eq!(other_type.as_deref(), Ok(&1), "types are apart");
        drop((a, b));
        assert_eq!(
            slots.get_or_make::<String, ()>(1, || Err(())),
            Err(()),
            "the slot does not keep its object alive"
        );
    }

    #[test]
    fn settings_are_kept_until_cleared() {
        let slots = Slots::default();
        assert!(slots.setting::<u64>().is_none());
        slots.set(Some(7u64));
        assert_eq!(slots.setting::<u64>().as_deref(), Some(&7));
        slots.set::<u64>(None);
        assert!(slots.setting::<u64>().is_none());
    }
}
