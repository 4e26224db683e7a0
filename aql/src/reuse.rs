//! The signal pool's reuse rule, as a small type of its own so that it can be model-checked
//! (`tests/loom.rs`): a completion signal released while a packet that decrements it may still
//! be in flight is not handed out again until its value shows that packet ran. kfdrt's signal
//! pool keeps its slots in a [`ReusePool`].

/// Slots free for use, and released slots waiting for their last armed completion.
#[derive(Debug)]
pub struct ReusePool<T> {
    free: Vec<T>,
    /// Released slots with the value their last armed completion will leave.
    pending: Vec<(T, i64)>,
}

impl<T> Default for ReusePool<T> {
    fn default() -> Self {
        ReusePool {
            free: Vec::new(),
            pending: Vec::new(),
        }
    }
}

impl<T> ReusePool<T> {
    /// Adds never-used slots.
    pub fn add_free(&mut self, slots: impl IntoIterator<Item = T>) {
        self.free.extend(slots);
    }

    /// Gives a slot back. `armed_target` is the value the last completion armed on it will
    /// leave (`None`: nothing armed); `value` reads the slot's value now. A slot whose
    /// completion has not happened yet waits in the pending list.
    pub fn release(&mut self, slot: T, armed_target: Option<i64>, value: impl Fn(&T) -> i64) {
        match armed_target {
            Some(t) if value(&slot) != t => self.pending.push((slot, t)),
            _ => self.free.push(slot),
        }
    }

    /// A slot to use: a free one, after moving every pending slot whose completion has happened
    /// (`value` reads a slot's value) to the free ones; `None` when there is none.
    pub fn take(&mut self, value: impl Fn(&T) -> i64) -> Option<T> {
        let mut i = 0;
        while i < self.pending.len() {
            if value(&self.pending[i].0) == self.pending[i].1 {
                let (slot, _) = self.pending.swap_remove(i);
                self.free.push(slot);
            } else {
                i += 1;
            }
        }
        self.free.pop()
    }

    /// Free slots.
    pub fn free_len(&self) -> usize {
        self.free.len()
    }

    /// Released slots still waiting for their completion.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }
}
